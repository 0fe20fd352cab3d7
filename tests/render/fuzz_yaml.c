/* fuzz_yaml.c: libFuzzer harness for the offline tools' input side.
 *
 * Arbitrary bytes go through wh_yaml_load, every loaded document through
 * wh_yaml_emit and back (the reload must succeed and give an equal value),
 * then the whole input through wh_check_text, which validates every Ray
 * object and renders its pods through the engine, and wh_check_table.
 * Crashes, leaks, hangs and sanitizer reports are found by libFuzzer/ASan;
 * the harness itself aborts when the emitter's output does not load back as
 * the same value.
 *
 * Build and run (clang only; a few minutes is plenty):
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DWH_FUZZ=ON
 *   cmake --build build-fuzz -j2 --target fuzz_yaml
 *   mkdir -p /tmp/yaml-corpus
 *   build-fuzz/tests/render/fuzz_yaml /tmp/yaml-corpus tests/fixtures/manifests \
 *       -max_len=4096 -timeout=10 -max_total_time=180 -rss_limit_mb=2048
 * fuzz_yaml_replay (any compiler) runs the same function over the manifest
 * fixtures, the samples and tests/render/corpus (inputs that once failed)
 * under ctest. */
#include <stdint.h> /* uint8_t */
#include <stdio.h>  /* fprintf */
#include <stdlib.h> /* abort, free */

#include "wh/buf.h"       /* wh_buf */
#include "wh/check.h"     /* wh_check_text, wh_check_table */
#include "wh/yaml.h"      /* wh_yaml_load */
#include "wh/yaml_emit.h" /* wh_yaml_emit */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The emitter's promise: its output loads back as an equal value. */
static void roundtrip(const cJSON *doc)
{
    struct wh_buf b;
    wh_buf_init(&b, 64u << 20);
    if (wh_yaml_emit(doc, &b) == WH_OK) {
        char errbuf[WH_ERRBUF_LEN] = "";
        cJSON *back = NULL;
        if (wh_yaml_load_one(wh_buf_ptr(&b), wh_buf_len(&b), &back, errbuf) != WH_OK) {
            fprintf(stderr, "emitted YAML does not load: %s\n%s\n", errbuf, wh_buf_ptr(&b));
            abort();
        }
        if (!cJSON_Compare(back, doc, 1)) {
            fprintf(stderr, "emitted YAML loads as another value:\n%s\n", wh_buf_ptr(&b));
            abort();
        }
        cJSON_Delete(back);
    }
    wh_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *docs = NULL;
    unsigned *lines = NULL;
    if (wh_yaml_load((const char *)data, size, &docs, &lines, errbuf) == WH_OK) {
        for (const cJSON *d = docs->child; d; d = d->next)
            roundtrip(d);
        cJSON_Delete(docs);
        free(lines);
    }
    cJSON *rows = cJSON_CreateArray();
    if (!rows)
        return 0;
    struct wh_check_stats st = {0};
    errbuf[0] = '\0';
    if (wh_check_text("fuzz.yaml", (const char *)data, size, rows, &st, errbuf) == WH_OK) {
        struct wh_buf t;
        wh_buf_init(&t, 64u << 20);
        enum wh_err err = wh_check_table(rows, &st, &t); /* only bounded growth can fail */
        (void)err;
        wh_buf_free(&t);
    }
    cJSON_Delete(rows);
    return 0;
}
