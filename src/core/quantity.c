/* quantity.c: Kubernetes resource.Quantity, reduced to what we need: the value
 * rounded up to a whole unit. Precision beyond a double does not matter for
 * chip counts; the clamp keeps absurd values from overflowing. */
#include "wh/quantity.h"

#include <math.h>   /* ceil, pow */
#include <string.h> /* strcmp */

struct suffix {
    const char *s;
    double mult;
};

static const struct suffix suffixes[] = {
    {"", 1},
    {"n", 1e-9},
    {"u", 1e-6},
    {"m", 1e-3},
    {"k", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
    {"Ki", 1024.0},
    {"Mi", 1048576.0},
    {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0},
    {"Pi", 1125899906842624.0},
    {"Ei", 1152921504606846976.0},
};

static long clamp_ceil(double v)
{
    if (!(v > 0))
        return 0;
    v = ceil(v - 1e-9); /* 0.1+0.2-style noise must not round 3 up to 4 */
    if (v > (double)WH_QUANTITY_MAX)
        return WH_QUANTITY_MAX;
    return (long)v;
}

bool wh_quantity_parse(const char *s, double *out)
{
    const char *p = s;
    double sign = 1;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    double mant = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++)
        mant = mant * 10 + (*p - '0');
    if (*p == '.') {
        double scale = 0.1;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++, scale /= 10)
            mant += (*p - '0') * scale;
    }
    if (digits == 0 || digits > 40)
        return false;
    double mult = -1;
    if ((*p == 'e' || *p == 'E') && p[1] != '\0' && p[1] != 'i') {
        const char *q = p + 1;
        int esign = 1, exp = 0, ed = 0;
        if (*q == '+' || *q == '-')
            esign = *q++ == '-' ? -1 : 1;
        for (; *q >= '0' && *q <= '9' && ed < 4; q++, ed++)
            exp = exp * 10 + (*q - '0');
        if (ed == 0 || *q != '\0')
            return false;
        mult = pow(10, esign * exp);
    } else {
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
            if (!strcmp(p, suffixes[i].s))
                mult = suffixes[i].mult;
    }
    if (mult < 0)
        return false;
    *out = sign * mant * mult;
    return true;
}

bool wh_quantity_ceil_str(const char *s, long *out)
{
    double v;
    if (!wh_quantity_parse(s, &v))
        return false;
    *out = clamp_ceil(v);
    return true;
}

bool wh_quantity_ceil(const cJSON *v, long *out)
{
    if (cJSON_IsNumber(v)) {
        *out = clamp_ceil(v->valuedouble);
        return true;
    }
    if (cJSON_IsString(v))
        return wh_quantity_ceil_str(v->valuestring, out);
    return false;
}
