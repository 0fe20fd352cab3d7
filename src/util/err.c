/* err.c: error codes and their text. */
#include "wh/err.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf */

#include "wh/utf8.h" /* wh_utf8_trim_cut */

static const char *const err_text[] = {
#define WH_ERR_TEXT(name, text) text,
    WH_ERR_MAP(WH_ERR_TEXT)
#undef WH_ERR_TEXT
};

const char *wh_strerror(enum wh_err err)
{
    if ((unsigned)err >= (unsigned)WH_ERR__COUNT)
        return "unknown error";
    return err_text[err];
}

enum wh_err wh_fail(char *errbuf, enum wh_err err, const char *fmt, ...)
{
    if (errbuf) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, WH_ERRBUF_LEN, fmt, ap);
        va_end(ap);
        wh_utf8_trim_cut(errbuf, WH_ERRBUF_LEN); /* no half character at a cut */
    }
    return err;
}
