# SPDX-License-Identifier: MIT
"""ctypes_echo.py -- libustreams loaded by Python's ctypes (dlopen, issue 22
item 5): open an echo stream with strm_open, push nullmod with strm_ioctl,
write, read back, I_NREAD, close; and libxnet loads beside it.  Run by ctest
(test_ctypes) as: python3 ctypes_echo.py LIBUSTREAMS LIBXNET I_PUSH I_NREAD.
Exit 0 and "ctypes: ok" when every check holds."""
import ctypes
import os
import sys

lib = ctypes.CDLL(sys.argv[1], use_errno=True)
xnet = ctypes.CDLL(sys.argv[2], use_errno=True)
I_PUSH, I_NREAD = int(sys.argv[3]), int(sys.argv[4])

lib.strm_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
lib.strm_write.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
lib.strm_write.restype = ctypes.c_ssize_t
lib.strm_read.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
lib.strm_read.restype = ctypes.c_ssize_t
lib.strm_ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]

fd = lib.strm_open(b"/dev/streams/clone/echo", os.O_RDWR)
assert fd >= 0, os.strerror(ctypes.get_errno())
assert lib.isastream(fd) == 1
assert lib.strm_ioctl(fd, I_PUSH, ctypes.cast(ctypes.c_char_p(b"nullmod"), ctypes.c_void_p)) == 0
for i in range(100):
    msg = b"ctypes %d" % i
    assert lib.strm_write(fd, msg, len(msg)) == len(msg)
    n = ctypes.c_int(-1)
    assert lib.strm_ioctl(fd, I_NREAD, ctypes.cast(ctypes.pointer(n), ctypes.c_void_p)) == 1
    assert n.value == len(msg), n.value
    buf = ctypes.create_string_buffer(64)
    assert lib.strm_read(fd, buf, 64) == len(msg)
    assert buf.raw[: len(msg)] == msg
assert lib.strm_close(fd) == 0
assert lib.strm_close(fd) == -1 and ctypes.get_errno() == 9  # EBADF
assert hasattr(xnet, "t_open")
print("ctypes: ok")
