/* kubelist.c: paged LISTs split into their items as they arrive (see
 * wh/kubelist.h). */
#include "wh/kubelist.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* memcmp, strlen */

#include "wh/json.h" /* wh_json_parse, wh_json_get, wh_json_str */
#include "wh/utf8.h" /* wh_utf8_cut */

/* The List's members besides its items: kind, apiVersion, metadata. */
#define REST_MAX ((size_t)1024 * 1024)

void wh_list_split_init(struct wh_list_split *s, int (*on_item)(void *, const char *, size_t),
                        void *arg)
{
    struct wh_buf rest = s->rest, item = s->item;
    bool had = s->rest.max != 0;
    memset(s, 0, sizeof(*s));
    if (had) { /* again: keep the memory */
        s->rest = rest;
        s->item = item;
        wh_buf_reset(&s->rest);
        wh_buf_reset(&s->item);
    } else {
        wh_buf_init(&s->rest, REST_MAX);
        wh_buf_init(&s->item, WH_KUBE_ITEM_MAX);
    }
    s->on_item = on_item;
    s->arg = arg;
}

void wh_list_split_free(struct wh_list_split *s)
{
    wh_buf_free(&s->rest);
    wh_buf_free(&s->item);
}

static int split_fail(struct wh_list_split *s, const char *why)
{
    if (!s->why[0])
        snprintf(s->why, sizeof(s->why), "%s", why);
    return -1;
}

enum target { T_NONE, T_REST, T_ITEM };

static int flush(struct wh_list_split *s, enum target t, const char *p, size_t n)
{
    if (!n || t == T_NONE)
        return 0;
    if (t == T_REST && wh_buf_addn(&s->rest, p, n))
        return split_fail(s, "the List's members other than items are over 1 MiB");
    if (t == T_ITEM && wh_buf_addn(&s->item, p, n)) {
        char why[sizeof(s->why)];
        snprintf(why, sizeof(why), "items[%zu] is larger than the %zu bytes the client takes",
                 s->n_items, (size_t)WH_KUBE_ITEM_MAX);
        return split_fail(s, why);
    }
    return 0;
}

/* Whether rest ends with the key "items" and its colon: the '[' that comes
 * next opens the List's items. */
static bool at_items_key(const struct wh_list_split *s)
{
    const char *r = wh_buf_ptr(&s->rest);
    size_t n = wh_buf_len(&s->rest);
    while (n && (r[n - 1] == ' ' || r[n - 1] == '\t' || r[n - 1] == '\r' || r[n - 1] == '\n'))
        n--;
    if (!n || r[--n] != ':')
        return false;
    while (n && (r[n - 1] == ' ' || r[n - 1] == '\t' || r[n - 1] == '\r' || r[n - 1] == '\n'))
        n--;
    return n >= 7 && !memcmp(r + n - 7, "\"items\"", 7);
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* One byte outside every string: where it goes, and the state it changes.
 * T_ITEM with *item_done set: it closes the current item. */
static enum target structural(struct wh_list_split *s, char c, bool *item_done)
{
    if (s->in_items && s->depth >= 3) { /* inside an item */
        if (c == '{' || c == '[')
            s->depth++;
        else if (c == '}' || c == ']')
            *item_done = --s->depth == 2;
        else if (c == '"')
            s->in_str = true;
        return T_ITEM;
    }
    if (s->in_items) { /* between items */
        if (is_ws(c) || c == ',')
            return T_NONE;
        if (c == '{') {
            s->depth++;
            wh_buf_reset(&s->item);
            return T_ITEM;
        }
        if (c == ']') {
            s->in_items = false;
            s->depth--;
            return T_REST;
        }
        char why[sizeof(s->why)];
        snprintf(why, sizeof(why), "items[%zu] is not a JSON object", s->n_items);
        split_fail(s, why);
        return T_NONE;
    }
    if (is_ws(c))
        return s->started && !s->done ? T_REST : T_NONE;
    if (s->done) {
        split_fail(s, "more after the List's closing brace");
        return T_NONE;
    }
    if (!s->started) {
        s->started = true;
        if (c != '{') {
            split_fail(s, "the answer is not a JSON object");
            return T_NONE;
        }
    }
    if (c == '{' || c == '[') {
        if (c == '[' && s->depth == 1 && at_items_key(s))
            s->in_items = true;
        s->depth++;
    } else if (c == '}' || c == ']') {
        if (--s->depth == 0)
            s->done = true;
        else if (s->depth < 0)
            split_fail(s, "a closing bracket without its opening one");
    } else if (c == '"') {
        s->in_str = true;
    }
    return T_REST;
}

int wh_list_split_feed(struct wh_list_split *s, const char *p, size_t n)
{
    if (s->why[0] || s->stopped)
        return -1;
    size_t run = 0; /* start of the bytes not yet flushed */
    enum target cur = (enum target)s->target;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        enum target t;
        bool item_done = false;
        if (s->in_str) {
            if (s->esc)
                s->esc = false;
            else if (c == '\\')
                s->esc = true;
            else if (c == '"')
                s->in_str = false;
            t = cur; /* a string's bytes go where its opening quote went */
        } else {
            if (c == '[' && s->depth == 1 && !s->in_items) {
                /* at_items_key reads rest: the key must be in it */
                if (flush(s, cur, p + run, i - run))
                    return -1;
                run = i;
            }
            t = structural(s, c, &item_done);
            if (s->why[0])
                return -1;
        }
        if (t != cur) {
            if (flush(s, cur, p + run, i - run))
                return -1;
            run = i;
            cur = t;
        }
        if (item_done) {
            if (flush(s, cur, p + run, i + 1 - run))
                return -1;
            run = i + 1;
            cur = T_NONE;
            s->n_items++;
            if (s->on_item(s->arg, wh_buf_ptr(&s->item), wh_buf_len(&s->item))) {
                s->stopped = true;
                return -1;
            }
        }
    }
    s->at += n;
    s->target = (int)cur;
    return flush(s, cur, p + run, n - run);
}

cJSON *wh_list_split_end(struct wh_list_split *s)
{
    if (s->why[0])
        return NULL;
    if (!s->started) {
        split_fail(s, "the answer is empty");
        return NULL;
    }
    if (!s->done || s->in_str) {
        split_fail(s, "the answer ends before the List does (cut short)");
        return NULL;
    }
    cJSON *list = NULL;
    char eb[WH_ERRBUF_LEN];
    if (wh_json_parse(wh_buf_ptr(&s->rest), wh_buf_len(&s->rest), &list, eb)) {
        snprintf(s->why, sizeof(s->why), "the List is not JSON: %.120s", eb);
        return NULL;
    }
    return list;
}

/* ---- the paged LIST ------------------------------------------------------ */

struct lister {
    const struct wh_kube_list_opts *o;
    struct wh_list_split split;
    struct wh_kube_list_stats *st;
    size_t page_bytes;
    enum wh_err err; /* the item's, when it stopped the page */
    char *errbuf;
};

static int got_item(void *arg, const char *json, size_t len)
{
    struct lister *l = arg;
    cJSON *item = NULL;
    char eb[WH_ERRBUF_LEN];
    if ((l->err = wh_json_parse(json, len, &item, eb))) {
        snprintf(l->split.why, sizeof(l->split.why), "items[%zu] is not JSON: %.100s",
                 l->split.n_items - 1, eb);
        return -1;
    }
    if (!cJSON_IsObject(item)) {
        cJSON_Delete(item);
        l->err = WH_ERR_INVALID;
        snprintf(l->split.why, sizeof(l->split.why), "items[%zu] is not a JSON object",
                 l->split.n_items - 1);
        return -1;
    }
    l->st->items++;
    if ((l->err = l->o->on_item(l->o->arg, item, l->errbuf)))
        return -1;
    return 0;
}

static int got_bytes(void *arg, const char *data, size_t len)
{
    struct lister *l = arg;
    l->page_bytes += len;
    l->st->bytes += len;
    return wh_list_split_feed(&l->split, data, len);
}

/* The message of an API server's Status body, else the body's first bytes
 * (what a proxy or load balancer answered). */
static void status_message(const struct wh_buf *body, char *out, size_t cap)
{
    cJSON *st = NULL;
    char eb[WH_ERRBUF_LEN];
    const char *msg = NULL;
    if (wh_buf_len(body) && !wh_json_parse(wh_buf_ptr(body), wh_buf_len(body), &st, eb))
        msg = wh_json_str(st, "message");
    if (msg)
        snprintf(out, cap, "%.*s", (int)wh_utf8_cut(msg, 400), msg);
    else
        snprintf(out, cap, "%.*s", (int)wh_utf8_cut(wh_buf_ptr(body), 300), wh_buf_ptr(body));
    cJSON_Delete(st);
}

/* path with limit and continue added. */
static enum wh_err page_path(const char *path, long limit, const char *cont, struct wh_buf *out)
{
    char esc[3 * WH_KUBE_CONTINUE_MAX];
    wh_kube_escape(esc, sizeof(esc), cont);
    wh_buf_reset(out);
    return wh_buf_addf(out, "%s%slimit=%ld%s%s", path, strchr(path, '?') ? "&" : "?", limit,
                       cont[0] ? "&continue=" : "", esc);
}

/* One page: WH_OK with cont set to the next token ("" after the last page),
 * WH_ERR_NOTFOUND when the API server no longer honours cont (410). */
static enum wh_err one_page(struct wh_kube *k, struct lister *l, const char *path, long limit,
                            char cont[WH_KUBE_CONTINUE_MAX], struct wh_buf *pp, char *errbuf)
{
    enum wh_err err = page_path(path, limit, cont, pp);
    if (err)
        return wh_fail(errbuf, err, "LIST %s: out of memory", path);
    struct wh_buf ebody;
    wh_buf_init(&ebody, 64 * 1024);
    long status = 0;
    l->err = WH_OK;
    l->page_bytes = 0;
    wh_list_split_init(&l->split, got_item, l);
    err = wh_kube_get_each(k, wh_buf_ptr(pp), got_bytes, l, &ebody, &status, NULL, errbuf);
    bool was_cont = cont[0] != '\0';
    cJSON *list = NULL;
    if (!err && status == 410 && was_cont) {
        err = WH_ERR_NOTFOUND;
    } else if (!err && status != 200) {
        char msg[512];
        status_message(&ebody, msg, sizeof(msg));
        err = wh_fail(errbuf, WH_ERR_HTTP, "LIST %s: HTTP %ld: %s", path, status, msg);
    } else if (!err && l->err && !l->split.why[0]) {
        err = l->err; /* the callee's, errbuf filled */
    } else if (!err && !(list = wh_list_split_end(&l->split))) {
        err = wh_fail(errbuf, l->err ? l->err : WH_ERR_INVALID,
                      "LIST %s: page %zu: %s (after %zu bytes)", path, l->st->pages + 1,
                      l->split.why, l->page_bytes);
    }
    wh_buf_free(&ebody);
    if (err)
        return err;
    l->st->pages++;
    const char *next = wh_json_str(wh_json_get(list, "metadata"), "continue");
    if (next && strlen(next) >= WH_KUBE_CONTINUE_MAX)
        err = wh_fail(errbuf, WH_ERR_TOOBIG,
                      "LIST %s: page %zu: a continue token of %zu bytes, over the %d the "
                      "client takes",
                      path, l->st->pages, strlen(next), WH_KUBE_CONTINUE_MAX - 1);
    else if (next && was_cont && !strcmp(next, cont))
        err = wh_fail(errbuf, WH_ERR_INVALID,
                      "LIST %s: page %zu: the API server answered the same continue token "
                      "again; the list would never end",
                      path, l->st->pages);
    else
        snprintf(cont, WH_KUBE_CONTINUE_MAX, "%s", next ? next : "");
    cJSON_Delete(list);
    return err;
}

enum wh_err wh_kube_list(struct wh_kube *k, const char *path, const struct wh_kube_list_opts *opts,
                         struct wh_kube_list_stats *stats, char *errbuf)
{
    struct wh_kube_list_stats local;
    struct wh_kube_list_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof(*st));
    struct lister l = {.o = opts, .st = st, .errbuf = errbuf};
    long limit = opts->page_size > 0 ? opts->page_size : WH_KUBE_LIST_PAGE;
    char cont[WH_KUBE_CONTINUE_MAX] = "";
    struct wh_buf pp;
    wh_buf_init(&pp, strlen(path) + 3 * WH_KUBE_CONTINUE_MAX + 64);
    enum wh_err err;
    for (;;) {
        err = one_page(k, &l, path, limit, cont, &pp, errbuf);
        if (err == WH_ERR_NOTFOUND && st->restarts == WH_KUBE_LIST_RESTARTS) {
            err = wh_fail(errbuf, WH_ERR_UNAVAILABLE,
                          "LIST %s: the API server expired the list's continue token %zu times "
                          "in a row (HTTP 410 Gone): a paged list must end before the server "
                          "compacts the snapshot it reads (about 5 minutes by default); retry, "
                          "or list less at once (-n NAMESPACE, -l SELECTOR)",
                          path, st->restarts + 1);
        } else if (err == WH_ERR_NOTFOUND) { /* from the first page again */
            st->restarts++;
            cont[0] = '\0';
            if (opts->on_restart)
                opts->on_restart(opts->arg);
            continue;
        }
        if (err || !cont[0])
            break;
    }
    wh_buf_free(&pp);
    wh_list_split_free(&l.split);
    return err;
}
