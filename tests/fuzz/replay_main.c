/* SPDX-License-Identifier: MIT */
/*
 * replay_main.c -- main() for a fuzz target in the normal (gcc) build: runs
 * LLVMFuzzerTestOneInput over every file named on the command line, or over
 * every file of each directory named, as libFuzzer would replay a corpus.
 * So each target's sources keep compiling, and its corpus keeps passing
 * (ctest runs fuzz_NAME_replay over tests/fuzz/corpus/NAME/).
 * Prints "N passed, 0 failed"; any failure aborts inside the target.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    unsigned char *buf;
    long len;

    if (!fp || fseek(fp, 0, SEEK_END) != 0 || (len = ftell(fp)) < 0 ||
        fseek(fp, 0, SEEK_SET) != 0 || !(buf = malloc((size_t)len + 1))) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        if (fp)
            fclose(fp);
        return -1;
    }
    size_t got = fread(buf, 1, (size_t)len, fp);
    fclose(fp);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int n = 0, bad = 0;

    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file %s\n", argv[i]);
            bad++;
        } else if (S_ISDIR(st.st_mode)) {
            struct dirent **names;
            int k = scandir(argv[i], &names, NULL, alphasort);
            for (int j = 0; j < k; j++) {
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", argv[i], names[j]->d_name);
                if (names[j]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode))
                    replay_file(path) == 0 ? n++ : bad++;
                free(names[j]);
            }
            free(names);
        } else {
            replay_file(argv[i]) == 0 ? n++ : bad++;
        }
    }
    printf("%d passed, %d failed\n", n, bad);
    return bad != 0 || n == 0;
}
