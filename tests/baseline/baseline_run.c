/* baseline_run.c: runs many tpu-webhook command lines in one process, for
 * scripts/baseline.py (the answers baseline, tests/fixtures/baseline/).
 *
 * Starting the binary costs more than most answers (its libraries load
 * each time); the baseline runs thousands of command lines, so they go
 * through wh_cli_main, the binary's own entry point, one after another.
 * The baseline was first recorded by running the binary once per line;
 * this runner must give the same bytes (scripts/baseline.py --exec checks
 * it the slow way).
 *
 * Input (stdin): one case per line, fields separated by tabs: the file to
 * give the command as its stdin ("-" for none), then the arguments after
 * "tpu-webhook". Output (stdout): per case, a line "exit out_len err_len"
 * then the command's stdout and stderr bytes. Exit 2 on a bad input line or
 * a failure to capture. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wh/commands.h" /* wh_cli_main */

#define MAX_ARGS 32

/* A temporary file the command's fd 1 or 2 is pointed at. */
static int scratch(void)
{
    FILE *f = tmpfile();
    if (!f) {
        perror("baseline_run: tmpfile");
        exit(2);
    }
    return dup(fileno(f)); /* the FILE stays open, unused, until exit */
}

/* Rewinds and empties fd. */
static void reset(int fd)
{
    if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET) < 0) {
        perror("baseline_run: reset");
        exit(2);
    }
}

/* Copies what fd holds to out. Returns its length. */
static long drain(int fd, FILE *out)
{
    long len = (long)lseek(fd, 0, SEEK_END);
    if (len < 0 || lseek(fd, 0, SEEK_SET) < 0) {
        perror("baseline_run: seek");
        exit(2);
    }
    char chunk[65536];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0)
        fwrite(chunk, 1, (size_t)n, out);
    return len;
}

/* Runs one case with fds 0, 1, 2 pointed at stdin_path, out_fd and err_fd;
 * writes its record to out. */
static void run_case(char *line, int out_fd, int err_fd, int saved[3], FILE *out)
{
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    char *stdin_path = strtok(line, "\t");
    argv[argc++] = "tpu-webhook";
    for (char *a; argc <= MAX_ARGS && (a = strtok(NULL, "\t"));)
        argv[argc++] = a;
    argv[argc] = NULL;
    if (!stdin_path || argc < 2) {
        fprintf(stderr, "baseline_run: bad case line\n");
        exit(2);
    }
    int in_fd = open(strcmp(stdin_path, "-") ? stdin_path : "/dev/null", O_RDONLY);
    if (in_fd < 0) {
        fprintf(stderr, "baseline_run: %s: %s\n", stdin_path, strerror(errno));
        exit(2);
    }
    reset(out_fd);
    reset(err_fd);
    fflush(NULL);
    dup2(in_fd, 0);
    close(in_fd);
    clearerr(stdin);
    fseek(stdin, 0, SEEK_SET); /* drops what the last case left buffered */
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    int rc = wh_cli_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    clearerr(stdout);
    dup2(saved[0], 0);
    dup2(saved[1], 1);
    dup2(saved[2], 2);
    long out_len = (long)lseek(out_fd, 0, SEEK_END);
    long err_len = (long)lseek(err_fd, 0, SEEK_END);
    fprintf(out, "%d %ld %ld\n", rc, out_len, err_len);
    if (drain(out_fd, out) != out_len || drain(err_fd, out) != err_len) {
        fprintf(stderr, "baseline_run: capture changed under the read\n");
        exit(2);
    }
}

int main(void)
{
    /* The records go to a copy of the real stdout: fd 1 is the command's. */
    int saved[3] = {dup(0), dup(1), dup(2)};
    FILE *out = fdopen(dup(1), "wb");
    FILE *cases = fdopen(dup(0), "rb");
    if (saved[0] < 0 || saved[1] < 0 || saved[2] < 0 || !out || !cases) {
        perror("baseline_run: dup");
        return 2;
    }
    int out_fd = scratch(), err_fd = scratch();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, cases)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        run_case(line, out_fd, err_fd, saved, out);
        fflush(out);
    }
    free(line);
    return fclose(out) ? 2 : 0;
}
