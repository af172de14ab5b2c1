/* SPDX-License-Identifier: MIT */
/*
 * test_readme.c -- the C snippets of README.md compile as shown, so that the
 * README cannot rot.
 *   1. "## Quick start": its first ```c block is a whole program; it is compiled
 *      against include/ and the build's static library, run, and must print
 *      "hdr hello" (echo sends back what putmsg sent) and exit 0.
 *   2. "## Writing a module": its first ```c block is a module; it is
 *      compiled with a main() that registers it (upmod_register, as the
 *      snippet says) and pushes "upmod" on an echo stream, then run.
 * Compiler: the one that built the library (USTREAMS_TEST_CC), with the
 * build's sanitizer flags (USTREAMS_TEST_SANFLAGS); exit 77 (skipped) when no
 * compiler is found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#ifndef USTREAMS_TEST_CC
#define USTREAMS_TEST_CC "cc"
#endif
#ifndef USTREAMS_GEN_INCLUDEDIR /* where the build generates <ustreams_version.h> */
#define USTREAMS_GEN_INCLUDEDIR USTREAMS_SOURCE_DIR "/include"
#endif
#ifndef USTREAMS_TEST_SANFLAGS
#define USTREAMS_TEST_SANFLAGS ""
#endif

static char dir[] = "/tmp/ust_readmeXXXXXX";

/* The first ```c block after the line `heading` in text (malloc'ed), or
 * NULL. */
static char *snippet(const char *text, const char *heading)
{
    const char *h = strstr(text, heading);
    const char *b = h ? strstr(h, "\n```c\n") : NULL;
    const char *e = b ? strstr(b + 6, "\n```\n") : NULL;
    if (!e)
        return NULL;
    b += 6;
    char *s = malloc((size_t)(e - b) + 2);
    memcpy(s, b, (size_t)(e - b));
    memcpy(s + (e - b), "\n", 2);
    return s;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = malloc(1 << 20);
    size_t n = f && buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    if (f)
        fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static void write_file(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(a, f);
    fputs(b, f);
    fclose(f);
}

/* Compile src into exe and run it; its stdout in out. 0 if both worked. */
static int build_and_run(const char *src, const char *exe, char *out, size_t size)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "'%s' -std=c11 -Wall -Werror %s -I'%s/include' -I'%s' '%s' '%s' -lpthread -ldl -o '%s'",
             USTREAMS_TEST_CC, USTREAMS_TEST_SANFLAGS, USTREAMS_SOURCE_DIR, USTREAMS_GEN_INCLUDEDIR, src,
             USTREAMS_STATIC_LIB, exe);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_readme: failed: %s\n", cmd);
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "'%s'", exe);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, size - 1, p) : 0;
    out[n] = '\0';
    int st = p ? pclose(p) : -1;
    return st == 0 ? 0 : -1;
}

int main(void)
{
    char path[256], exe[256], out[256];
    char *readme = read_file(USTREAMS_SOURCE_DIR "/README.md");
    char *using = snippet(readme, "\n## Quick start\n");
    char *module = snippet(readme, "\n## Writing a module\n");

    if (system("command -v '" USTREAMS_TEST_CC "' >/dev/null 2>&1") != 0) {
        printf("test_readme: no C compiler (%s), skipped\n", USTREAMS_TEST_CC);
        return 77;
    }
    CHECK(using != NULL);
    CHECK(module != NULL);
    CHECK(mkdtemp(dir) != NULL);

    snprintf(path, sizeof(path), "%s/using.c", dir);
    snprintf(exe, sizeof(exe), "%s/using", dir);
    write_file(path, using ? using : "", "");
    CHECK_EQ(build_and_run(path, exe, out, sizeof(out)), 0);
    CHECK_EQ(strcmp(out, "hdr hello\n"), 0);

    snprintf(path, sizeof(path), "%s/module.c", dir);
    snprintf(exe, sizeof(exe), "%s/module", dir);
    write_file(path, module ? module : "",
               "\n#include <fcntl.h>\n#include <stdio.h>\n#include <ustreams.h>\n"
               "int main(void)\n{\n"
               "    int fd;\n"
               "    char name[FMNAMESZ + 1];\n"
               "    if (upmod_register() != 0 ||\n"
               "        (fd = strm_open(\"/dev/streams/clone/echo\", O_RDWR)) < 0 ||\n"
               "        strm_ioctl(fd, I_PUSH, \"upmod\") != 0 ||\n"
               "        strm_ioctl(fd, I_LOOK, name) != 0 || strm_write(fd, \"x\", 1) != 1)\n"
               "        return 1;\n"
               "    printf(\"%s\\n\", name);\n"
               "    return strm_close(fd);\n}\n");
    CHECK_EQ(build_and_run(path, exe, out, sizeof(out)), 0);
    CHECK_EQ(strcmp(out, "upmod\n"), 0);

    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
    free(readme);
    free(using);
    free(module);
    CHECK_NO_BLOCKS();
    return CHECK_RESULT();
}
