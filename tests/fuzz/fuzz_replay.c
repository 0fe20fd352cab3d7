/* fuzz_replay.c: runs LLVMFuzzerTestOneInput (fuzz_review.c) over files
 * given on the command line, so that any compiler (gcc in CI, under ASan with
 * -DWH_SANITIZE=ON) replays the committed corpus. The harness aborts on a bad
 * answer; this driver fails when a file cannot be read. */
#include <stdint.h> /* uint8_t */
#include <stdio.h>  /* fopen */
#include <stdlib.h> /* malloc */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_replay FILE...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "fuzz_replay: cannot open %s\n", argv[i]);
            return 1;
        }
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
        if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
            fprintf(stderr, "fuzz_replay: cannot read %s\n", argv[i]);
            fclose(f);
            free(buf);
            return 1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)n);
        free(buf);
    }
    printf("fuzz_replay: %d input(s) replayed\n", argc - 1);
    return 0;
}
