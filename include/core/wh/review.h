/* review.h: the parsed AdmissionReview (engine-internal layout). Shells use
 * the opaque struct wh_review and the functions of engine.h. */
#ifndef WH_REVIEW_H
#define WH_REVIEW_H

#include <cjson/cJSON.h>

#include "wh/engine.h" /* struct wh_review_info */

struct wh_review {
    cJSON *root;            /* owned: the whole AdmissionReview */
    const cJSON *request;   /* borrowed from root */
    struct wh_review_info info; /* strings borrowed from root */
};

#endif
