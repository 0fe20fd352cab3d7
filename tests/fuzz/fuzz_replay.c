/* fuzz_replay.c: runs LLVMFuzzerTestOneInput (fuzz_review.c) over files
 * given on the command line, so that any compiler (gcc in CI, under ASan with
 * -DWH_SANITIZE=ON) replays the committed corpus. The harness aborts on a bad
 * answer; this driver fails when a file cannot be read.
 *
 *   fuzz_replay FILE...                  every file must pass
 *   fuzz_replay --arena FILE...          the same, every input in a request
 *                                        arena bound to the thread, as the
 *                                        server runs the engine (reqmem.h)
 *   fuzz_replay --known-bug FILE...      every file must still fail (each in
 *                                        its own process): reproducers of
 *                                        engine bugs not fixed yet; once one
 *                                        passes, move it to the corpus */
#include <stdint.h>   /* uint8_t */
#include <stdio.h>    /* fopen */
#include <stdlib.h>   /* malloc */
#include <string.h>   /* strcmp */
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork */

#include "wh/reqmem.h" /* wh_reqmem_* */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct wh_reqmem *rm; /* --arena: the server's request memory */

/* Feed one file to the harness; non-zero when it cannot be read (the
 * harness itself aborts on a bad answer). */
static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
        fclose(f);
        free(buf);
        return 1;
    }
    fclose(f);
    struct wh_arena *a = rm ? wh_reqmem_get(rm) : NULL;
    if (rm && !a) {
        fprintf(stderr, "fuzz_replay: no arena for %s\n", path);
        free(buf);
        return 1;
    }
    wh_reqmem_bind(a);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    wh_reqmem_bind(NULL);
    wh_reqmem_put(rm, a); /* the whole review's memory at once */
    free(buf);
    return 0;
}

/* Run each file in a child that must fail. */
static int expect_failures(int n, char **files)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            freopen("/dev/null", "w", stderr);
            _exit(replay(files[i]) ? 3 : 0);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) < 0)
            return 1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            printf("fuzz_replay: %s now passes: the bug is fixed, move it to tests/fuzz/corpus/\n",
                   files[i]);
            rc = 1;
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
            printf("fuzz_replay: %s cannot be read\n", files[i]);
            rc = 1;
        } else {
            printf("fuzz_replay: %s still fails (known engine bug)\n", files[i]);
        }
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--known-bug"))
        return expect_failures(argc - 2, argv + 2);
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_replay [--known-bug | --arena] FILE...\n");
        return 2;
    }
    int first = 1;
    if (!strcmp(argv[1], "--arena") && argc > 2) {
        wh_reqmem_install();
        /* The harness builds its cluster state on its first call and keeps
         * it: that call runs on the heap, as the server's caches and ledger
         * live outside request arenas. */
        if (replay(argv[2]))
            return 1;
        if (!(rm = wh_reqmem_new(NULL))) {
            fprintf(stderr, "fuzz_replay: out of memory\n");
            return 1;
        }
        first = 2;
    }
    int rc = 0;
    for (int i = first; i < argc && !rc; i++)
        rc = replay(argv[i]);
    wh_reqmem_free(rm);
    if (!rc)
        printf("fuzz_replay: %d input(s) replayed%s\n", argc - first,
               first == 2 ? " in arenas" : "");
    return rc;
}
