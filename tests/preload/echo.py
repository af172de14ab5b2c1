# SPDX-License-Identifier: MIT
# echo.py -- an unmodified Python program on a STREAMS echo stream, run by
# tests/test_preload_run.c under `ustreams run` (issue 22 item 1).
# argv: I_PUSH I_LOOK I_FIND I_LIST I_NREAD (the values of <stropts.h>).
# Every step asserts its result; exit 0 only when all hold.
import ctypes, fcntl, os, select, struct, sys

I_PUSH, I_LOOK, I_FIND, I_LIST, I_NREAD = (int(a, 0) for a in sys.argv[1:6])
FMNAMESZ = 8

fd = os.open('/dev/streams/clone/echo', os.O_RDWR)
assert fd >= 0
lib = ctypes.CDLL(None)
assert lib.isastream(fd) == 1, "isastream under the preload"
assert os.write(fd, b'hello') == 5
r, w, x = select.select([fd], [fd], [], 5)
assert r == [fd] and w == [fd], (r, w)
nread = struct.unpack('i', fcntl.ioctl(fd, I_NREAD, struct.pack('i', 0)))[0]
assert nread == 5, nread
assert os.read(fd, 100) == b'hello'
r, _, _ = select.select([fd], [], [], 0.05)
assert r == [], "nothing left to read"

assert fcntl.ioctl(fd, I_PUSH, b'nullmod\0') == b'nullmod\0'
name = fcntl.ioctl(fd, I_LOOK, b'\0' * (FMNAMESZ + 1))
assert name.rstrip(b'\0') == b'nullmod', name
# A mutable buffer makes fcntl.ioctl return the call's result (1: found).
assert fcntl.ioctl(fd, I_FIND, bytearray(b'nullmod\0'), True) == 1
assert fcntl.ioctl(fd, I_FIND, bytearray(b'srvmod\0'), True) == 0
nmods = fcntl.ioctl(fd, I_LIST, 0)
assert nmods == 2, nmods  # nullmod and the driver
# Still an echo through the module; message boundaries kept by read in
# message-discard mode are not asked here: byte stream.
for i in range(100):
    msg = b'm%03d' % i
    assert os.write(fd, msg) == 4
    assert os.read(fd, 4) == msg
os.close(fd)
try:
    os.write(fd, b'x')
    assert False, "write after close"
except OSError as e:
    assert e.errno == 9, e  # EBADF
print("echo.py: ok")
