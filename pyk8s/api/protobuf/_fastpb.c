/* The protobuf codec's hot loop in C: a dict encoded as an upstream message and a message decoded into a dict,
 * driven by the schema pyk8s.api.protobuf.schema compiles (loaded once with `load`). It does what codec.py's
 * encode_message/decode_message do, field for field; codec.py stays the reference and the fallback, and the
 * tests hold the two to the same bytes and the same dicts. Conversions that are rare on the wire (durations,
 * []byte as base64, RawExtension/FieldsV1 JSON, timestamps not in upstream's canonical form) call back into
 * the Python helpers given to `load`. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum Kind {
    K_STRING = 1, K_BYTES = 2, K_BOOL = 3, K_INT = 4, K_MESSAGE = 5, K_TIME = 6, K_MICRO_TIME = 7,
    K_DURATION = 8, K_QUANTITY = 9, K_INT_OR_STRING = 10, K_RAW = 11, K_STRING_LIST = 12, K_DOUBLE = 13,
    K_UNION = 14
};

#define MAX_DEPTH 100
#define GO_ZERO_TIME (-62135596800LL)

typedef struct Field {
    uint32_t number;
    PyObject *key; /* interned str; NULL when inlined */
    int kind;
    int repeated, is_map, int32;
    int msg; /* message index for K_MESSAGE, else -1 */
    struct Field *value; /* a map's value */
    unsigned char tag[6];
    int taglen;
    Py_hash_t hash; /* the key's */
} Field;

/* A slot of a message's key table: the field's JSON key and its hash. */
typedef struct {
    PyObject *key;
    Py_hash_t hash;
    int idx; /* -1: empty */
} Slot;

/* A direct-mapped cache by a key object's address: the dicts pyk8s encodes have their keys from orjson's key
 * cache (one str object per text) or from this codec (interned), so the same few objects come back and the
 * field is found without reading the key's hash or text. It holds a reference to each key it keeps, so an
 * address is never reused while cached. */
#define PTR_CACHE 64
typedef struct {
    PyObject *key;
    int idx; /* -1: not a field of this message */
} PtrEntry;

typedef struct {
    int nfields;
    Field *fields;
    uint32_t maxnum;
    int16_t *by_number; /* field index by number, -1 when absent */
    Slot *slots;        /* open addressing: JSON key -> field index, for the fields that are not inlined */
    Py_hash_t mask;
    int ninline;
    PtrEntry *ptr_cache; /* allocated on first use */
    int lenhint; /* bytes the length of this message took last time: reserved before its content next time */
    int keyhint; /* keys the last dict decoded from this message had: the next one is made that size */
    int unordered; /* objects of this message still to be sorted before trying to write one in order again */
    int u_obj, u_list, u_flag; /* as a K_UNION's message: its object, list and bool fields (-1: none) */
} Msg;

static int field_by_text(const Msg *m, PyObject *k) {
    Py_hash_t h = ((PyASCIIObject *)k)->hash;
    if (h == -1 && (h = PyObject_Hash(k)) == -1) {
        PyErr_Clear();
        return -1;
    }
    for (Py_hash_t i = h & m->mask;; i = (i + 1) & m->mask) {
        Slot *s = &m->slots[i];
        if (s->idx < 0) return -1;
        if (s->key == k) return s->idx;
        if (s->hash == h && PyUnicode_GET_LENGTH(s->key) == PyUnicode_GET_LENGTH(k) &&
            PyUnicode_KIND(s->key) == PyUnicode_KIND(k) &&
            memcmp(PyUnicode_DATA(s->key), PyUnicode_DATA(k), PyUnicode_GET_LENGTH(k) * PyUnicode_KIND(k)) == 0)
            return s->idx;
    }
}

/* The index of the field under JSON key `k`, or -1. */
static inline int field_of(Msg *m, PyObject *k) {
    if (!PyUnicode_CheckExact(k)) return -1;
    if (!m->ptr_cache) {
        m->ptr_cache = PyMem_Calloc(PTR_CACHE, sizeof(PtrEntry));
        if (!m->ptr_cache) {
            PyErr_Clear();
            return field_by_text(m, k);
        }
    }
    PtrEntry *e = &m->ptr_cache[((uintptr_t)k >> 4) & (PTR_CACHE - 1)];
    if (e->key == k) return e->idx;
    int j = field_by_text(m, k);
    Py_INCREF(k);
    Py_XSETREF(e->key, k);
    e->idx = j;
    return j;
}

static Msg *msgs = NULL;
static Py_ssize_t nmsgs = 0;

/* helpers from Python */
static PyObject *h_json_loads, *h_error, *h_time_parse, *h_time_format, *h_duration_parse, *h_duration_format, *h_quantity_text,
    *h_b64decode, *h_b64encode, *h_raw_dumps, *h_raw_value;

/* ---------------------------------------------------------------- buffers */

typedef struct {
    unsigned char *p;
    Py_ssize_t len, cap;
} Buf;

static int grow(Buf *b, Py_ssize_t need) {
    if (b->len + need <= b->cap) return 0;
    Py_ssize_t cap = b->cap * 2;
    if (cap < b->len + need + 256) cap = b->len + need + 256;
    unsigned char *p = PyMem_Realloc(b->p, cap);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int put_varint(Buf *b, uint64_t v) {
    if (grow(b, 10) < 0) return -1;
    while (v >= 0x80) {
        b->p[b->len++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (unsigned char)v;
    return 0;
}

static inline int put_raw(Buf *b, const void *src, Py_ssize_t n) {
    if (grow(b, n) < 0) return -1;
    memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

static inline int put_tag(Buf *b, const Field *f) { return put_raw(b, f->tag, f->taglen); }

static inline int put_bytes_field(Buf *b, const unsigned char *tag, int taglen, const char *s, Py_ssize_t n) {
    if (grow(b, taglen + 10 + n) < 0) return -1;
    memcpy(b->p + b->len, tag, taglen);
    b->len += taglen;
    put_varint(b, (uint64_t)n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

static int varint_size(uint64_t v) {
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A length-delimited field whose content is written after `open`: one byte is reserved for the length, and
 * the content is moved when its length needs more. */
static inline Py_ssize_t open_len(Buf *b) {
    if (grow(b, 1) < 0) return -1;
    return b->len++;
}

/* Writes the length of the content after `at`, where `r` bytes were reserved for it, moving the content when
 * the length takes another number of bytes; returns how many it took. */
static int close_reserved(Buf *b, Py_ssize_t at, int r) {
    Py_ssize_t size = b->len - at - r;
    int k = varint_size((uint64_t)size);
    if (k != r) {
        if (k > r && grow(b, k - r) < 0) return -1;
        memmove(b->p + at + k, b->p + at + r, size);
        b->len += k - r;
    }
    uint64_t v = (uint64_t)size;
    Py_ssize_t i = at;
    while (v >= 0x80) {
        b->p[i++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b->p[i] = (unsigned char)v;
    return k;
}

static int close_len(Buf *b, Py_ssize_t at) { return close_reserved(b, at, 1) < 0 ? -1 : 0; }

/* A nested message's length, written before its content: as many bytes are reserved as its length took the
 * last time a message of its type was written (sizes of a type keep to their class: metadata and specs over
 * 127 bytes, most others under), so the content rarely has to move once its length is known. */
static inline Py_ssize_t open_msg(Buf *b, const Msg *m, int *reserved) {
    int r = *reserved = m->lenhint > 0 ? m->lenhint : 1;
    if (grow(b, r) < 0) return -1;
    Py_ssize_t at = b->len;
    b->len += r;
    return at;
}

static int close_msg(Buf *b, Py_ssize_t at, int r, Msg *m) {
    /* `r`: what open_msg reserved (the hint may have moved since: a message can hold one of its own type) */
    int k = close_reserved(b, at, r);
    if (k < 0) return -1;
    m->lenhint = k;
    return 0;
}

/* ---------------------------------------------------------------- time */

static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int days_in(int m, int y) {
    if (m == 2) return (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 29 : 28;
    return (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
}

/* "YYYY-MM-DDTHH:MM:SSZ" or "YYYY-MM-DDTHH:MM:SS.ffffffZ" (what upstream writes); 1 when it is neither. */
static int parse_canonical_time(const char *s, Py_ssize_t n, int64_t *sec, int64_t *nsec) {
    int y, mo, d, h, mi, se, frac = 0;
    if (n != 20 && n != 27) return 1;
    if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[n - 1] != 'Z') return 1;
    if (digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) || digits(s + 11, 2, &h) ||
        digits(s + 14, 2, &mi) || digits(s + 17, 2, &se))
        return 1;
    if (n == 27 && (s[19] != '.' || digits(s + 20, 6, &frac))) return 1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in(mo, y) || h > 23 || mi > 59 || se > 59) return 1;
    *sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    *nsec = (int64_t)frac * 1000;
    return 0;
}

/* The timestamps of an object are mostly one second (created, scheduled, started, its managedFields): the
 * last one read and the last one written are kept, with a reference to the string, and come back without
 * parsing or formatting. */
static struct {
    PyObject *text;
    int64_t sec, nsec;
    int micro;
} last_parsed, last_formatted;

static int time_of(PyObject *v, int64_t *sec, int64_t *nsec) {
    if (PyUnicode_Check(v)) {
        PyObject *t = last_parsed.text;
        if (t && (t == v || (PyUnicode_GET_LENGTH(t) == PyUnicode_GET_LENGTH(v) && PyUnicode_IS_COMPACT_ASCII(v) &&
                             memcmp(PyUnicode_DATA(t), PyUnicode_DATA(v), PyUnicode_GET_LENGTH(v)) == 0))) {
            *sec = last_parsed.sec;
            *nsec = last_parsed.nsec;
            return 0;
        }
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (!s) return -1;
        if (parse_canonical_time(s, n, sec, nsec) == 0) {
            if (PyUnicode_IS_COMPACT_ASCII(v)) {
                Py_XSETREF(last_parsed.text, Py_NewRef(v));
                last_parsed.sec = *sec;
                last_parsed.nsec = *nsec;
            }
            return 0;
        }
    }
    PyObject *r = PyObject_CallOneArg(h_time_parse, v);
    if (!r) return -1;
    long long a, c;
    if (!PyArg_ParseTuple(r, "LL", &a, &c)) {
        Py_DECREF(r);
        return -1;
    }
    Py_DECREF(r);
    *sec = a;
    *nsec = c;
    return 0;
}

static PyObject *format_time(int64_t sec, int64_t nsec, int micro) {
    if (last_formatted.text && last_formatted.sec == sec && last_formatted.micro == micro &&
        (!micro || last_formatted.nsec / 1000 == nsec / 1000))
        return Py_NewRef(last_formatted.text);
    int64_t days = sec / 86400, rem = sec % 86400;
    if (rem < 0) {
        rem += 86400;
        days -= 1;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999 || nsec < 0 || nsec > 999999999) {
        return PyObject_CallFunction(h_time_format, "LLi", (long long)sec, (long long)nsec, micro);
    }
    int hh = (int)(rem / 3600), mi = (int)(rem % 3600 / 60), ss = (int)(rem % 60);
    PyObject *out = PyUnicode_New(micro ? 27 : 20, 127);
    if (!out) return NULL;
    char *p = (char *)PyUnicode_DATA(out);
    int yy = (int)y;
    p[0] = '0' + yy / 1000, p[1] = '0' + yy / 100 % 10, p[2] = '0' + yy / 10 % 10, p[3] = '0' + yy % 10;
    p[4] = '-', p[5] = '0' + m / 10, p[6] = '0' + m % 10, p[7] = '-', p[8] = '0' + d / 10, p[9] = '0' + d % 10;
    p[10] = 'T', p[11] = '0' + hh / 10, p[12] = '0' + hh % 10, p[13] = ':', p[14] = '0' + mi / 10;
    p[15] = '0' + mi % 10, p[16] = ':', p[17] = '0' + ss / 10, p[18] = '0' + ss % 10;
    if (micro) {
        int us = (int)(nsec / 1000);
        p[19] = '.';
        for (int i = 25; i >= 20; i--, us /= 10) p[i] = '0' + us % 10;
        p[26] = 'Z';
    } else {
        p[19] = 'Z';
    }
    Py_XSETREF(last_formatted.text, Py_NewRef(out));
    last_formatted.sec = sec;
    last_formatted.nsec = nsec;
    last_formatted.micro = micro;
    return out;
}

/* ---------------------------------------------------------------- encoding */

static int encode_message(Buf *b, Msg *m, PyObject *obj, int depth);

static const char *field_name(const Field *f) { return f->key ? PyUnicode_AsUTF8(f->key) : "(inline)"; }

static int put_string_value(Buf *b, const unsigned char *tag, int taglen, PyObject *v) {
    Py_ssize_t n;
    const char *s;
    if (PyUnicode_CheckExact(v) && PyUnicode_IS_COMPACT_ASCII(v)) /* most strings: their bytes are their UTF-8 */
        return put_bytes_field(b, tag, taglen, (const char *)PyUnicode_DATA(v), PyUnicode_GET_LENGTH(v));
    if (PyUnicode_Check(v)) {
        s = PyUnicode_AsUTF8AndSize(v, &n);
        if (s) return put_bytes_field(b, tag, taglen, s, n);
        /* lone surrogates: written as Python's surrogatepass writes them, as the reference codec does */
        PyErr_Clear();
        PyObject *enc = PyUnicode_AsEncodedString(v, "utf-8", "surrogatepass");
        if (!enc) return -1;
        int r = put_bytes_field(b, tag, taglen, PyBytes_AS_STRING(enc), PyBytes_GET_SIZE(enc));
        Py_DECREF(enc);
        return r;
    }
    PyObject *str = PyObject_Str(v);
    if (!str) return -1;
    int r = put_string_value(b, tag, taglen, str);
    Py_DECREF(str);
    return r;
}

static int put_int(Buf *b, PyObject *v) {
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyObject *i = PyNumber_Long(v);
        if (!i) return -1;
        x = PyLong_AsLongLong(i);
        Py_DECREF(i);
        if (x == -1 && PyErr_Occurred()) return -1;
    }
    return put_varint(b, (uint64_t)x);
}

static const unsigned char TAG1_LEN[] = {0x0a};
static const unsigned char TAG3_LEN[] = {0x1a};

static int put_bytes_object(Buf *b, const unsigned char *tag, int taglen, PyObject *bytes) {
    if (!PyBytes_Check(bytes)) {
        PyErr_SetString(PyExc_TypeError, "expected bytes from a helper");
        return -1;
    }
    return put_bytes_field(b, tag, taglen, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
}

static int encode_union(Buf *b, const Field *f, PyObject *v, int depth);

static int encode_value(Buf *b, const Field *f, PyObject *v, int depth) {
    Py_ssize_t at;
    switch (f->kind) {
    case K_STRING:
        return put_string_value(b, f->tag, f->taglen, v);
    case K_INT:
        if (put_tag(b, f) < 0) return -1;
        return put_int(b, v);
    case K_BOOL: {
        int t = PyObject_IsTrue(v);
        if (t < 0 || put_tag(b, f) < 0 || grow(b, 1) < 0) return -1;
        b->p[b->len++] = (unsigned char)t;
        return 0;
    }
    case K_MESSAGE:
        if (!PyDict_Check(v)) {
            PyErr_Format(h_error, "field %s: expected an object", field_name(f));
            return -1;
        }
    {
        int r;
        if (put_tag(b, f) < 0 || (at = open_msg(b, &msgs[f->msg], &r)) < 0) return -1;
        if (encode_message(b, &msgs[f->msg], v, depth + 1) < 0) return -1;
        return close_msg(b, at, r, &msgs[f->msg]);
    }
    case K_BYTES: {
        if (PyBytes_Check(v)) return put_bytes_object(b, f->tag, f->taglen, v);
        PyObject *raw = PyObject_CallOneArg(h_b64decode, v);
        if (!raw) return -1;
        int r = put_bytes_object(b, f->tag, f->taglen, raw);
        Py_DECREF(raw);
        return r;
    }
    case K_TIME:
    case K_MICRO_TIME: {
        int64_t sec, nsec;
        if (time_of(v, &sec, &nsec) < 0) return -1;
        if (f->kind == K_TIME) nsec = 0; /* metav1.Time keeps seconds only on the wire */
        else nsec = nsec / 1000 * 1000;
        if (put_tag(b, f) < 0 || (at = open_len(b)) < 0) return -1;
        /* Go's zero time is an empty message; any other is seconds and nanos, both always written */
        if (!(sec == GO_ZERO_TIME && nsec == 0) &&
            (put_varint(b, 0x08) < 0 || put_varint(b, (uint64_t)sec) < 0 || put_varint(b, 0x10) < 0 ||
             put_varint(b, (uint64_t)nsec) < 0))
            return -1;
        return close_len(b, at);
    }
    case K_DURATION: {
        long long ns;
        if (PyLong_Check(v)) {
            ns = PyLong_AsLongLong(v);
        } else {
            PyObject *r = PyObject_CallOneArg(h_duration_parse, v);
            if (!r) return -1;
            ns = PyLong_AsLongLong(r);
            Py_DECREF(r);
        }
        if (ns == -1 && PyErr_Occurred()) return -1;
        if (put_tag(b, f) < 0 || (at = open_len(b)) < 0) return -1;
        if (put_varint(b, 0x08) < 0 || put_varint(b, (uint64_t)ns) < 0) return -1;
        return close_len(b, at);
    }
    case K_QUANTITY: {
        if (put_tag(b, f) < 0 || (at = open_len(b)) < 0) return -1;
        if (PyUnicode_Check(v)) {
            if (put_string_value(b, TAG1_LEN, 1, v) < 0) return -1;
        } else {
            PyObject *text = PyObject_CallOneArg(h_quantity_text, v);
            if (!text) return -1;
            int r = put_string_value(b, TAG1_LEN, 1, text);
            Py_DECREF(text);
            if (r < 0) return -1;
        }
        return close_len(b, at);
    }
    case K_INT_OR_STRING:
        if (put_tag(b, f) < 0 || (at = open_len(b)) < 0) return -1;
        /* type, intVal and strVal are all written, as Go writes them */
        if (PyUnicode_Check(v)) {
            if (put_raw(b, "\x08\x01\x10\x00", 4) < 0 || put_string_value(b, TAG3_LEN, 1, v) < 0) return -1;
        } else {
            if (put_raw(b, "\x08\x00\x10", 3) < 0 || put_int(b, v) < 0 || put_raw(b, "\x1a\x00", 2) < 0) return -1;
        }
        return close_len(b, at);
    case K_RAW: {
        PyObject *raw = PyObject_CallOneArg(h_raw_dumps, v);
        if (!raw) return -1;
        if (put_tag(b, f) < 0 || (at = open_len(b)) < 0) {
            Py_DECREF(raw);
            return -1;
        }
        int r = put_bytes_object(b, TAG1_LEN, 1, raw);
        Py_DECREF(raw);
        if (r < 0) return -1;
        return close_len(b, at);
    }
    case K_STRING_LIST: {
        if (!PyList_Check(v)) {
            PyErr_Format(h_error, "field %s: expected a list", field_name(f));
            return -1;
        }
        if (put_tag(b, f) < 0 || (at = open_len(b)) < 0) return -1;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++)
            if (put_string_value(b, TAG1_LEN, 1, PyList_GET_ITEM(v, i)) < 0) return -1;
        return close_len(b, at);
    }
    case K_DOUBLE: {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) return -1;
        uint64_t bits;
        memcpy(&bits, &d, 8);
        if (put_tag(b, f) < 0 || grow(b, 8) < 0) return -1;
        for (int i = 0; i < 8; i++) b->p[b->len++] = (unsigned char)(bits >> (8 * i)); /* little-endian */
        return 0;
    }
    case K_UNION:
        return encode_union(b, f, v, depth);
    }
    PyErr_SetString(PyExc_SystemError, "unknown field kind");
    return -1;
}

/* A JSONSchemaPropsOr* value in the field of its message that takes its shape: an object (beside a true bool, where
 * the message has one), a list, or a bool. */
static int encode_union(Buf *b, const Field *f, PyObject *v, int depth) {
    Msg *u = &msgs[f->msg];
    const Field *obj = u->u_obj >= 0 ? &u->fields[u->u_obj] : NULL;
    const Field *list = u->u_list >= 0 ? &u->fields[u->u_list] : NULL;
    const Field *flag = u->u_flag >= 0 ? &u->fields[u->u_flag] : NULL;
    int r;
    Py_ssize_t at;
    if (!(PyDict_Check(v) && obj) && !(PyList_Check(v) && list) && !(PyBool_Check(v) && flag)) {
        PyErr_Format(h_error, "field %s: a value of a shape the field does not take", field_name(f));
        return -1;
    }
    if (put_tag(b, f) < 0 || (at = open_msg(b, u, &r)) < 0) return -1;
    if (PyDict_Check(v)) {
        if (flag) { /* a schema allows what it describes (fields are written in number order: allows first) */
            if (put_tag(b, flag) < 0 || grow(b, 1) < 0) return -1;
            b->p[b->len++] = 1;
        }
        if (encode_value(b, obj, v, depth + 1) < 0) return -1;
    } else if (PyList_Check(v)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            PyObject *item = PyList_GET_ITEM(v, i);
            if (item != Py_None && encode_value(b, list, item, depth + 1) < 0) return -1;
        }
    } else {
        if (put_tag(b, flag) < 0 || grow(b, 1) < 0) return -1;
        b->p[b->len++] = v == Py_True;
    }
    return close_msg(b, at, r, u);
}

static int encode_map(Buf *b, const Field *f, PyObject *v, int depth) {
    if (!PyDict_Check(v)) {
        PyErr_Format(h_error, "field %s: expected an object", field_name(f));
        return -1;
    }
    /* Go writes map entries sorted by key. A small map of ASCII keys is sorted here, on the stack; others by
     * Python's sort. */
    PyObject *small_k[16], *small_v[16];
    Py_ssize_t n = PyDict_GET_SIZE(v);
    if (n <= 16) {
        Py_ssize_t pos = 0, m = 0;
        PyObject *k, *item;
        int ascii = 1;
        while (PyDict_Next(v, &pos, &k, &item)) {
            if (!PyUnicode_CheckExact(k) || !PyUnicode_IS_COMPACT_ASCII(k)) {
                ascii = 0;
                break;
            }
            Py_ssize_t i = m++;
            while (i > 0) {
                PyObject *prev = small_k[i - 1];
                Py_ssize_t lp = PyUnicode_GET_LENGTH(prev), lk = PyUnicode_GET_LENGTH(k);
                int c = memcmp(PyUnicode_DATA(prev), PyUnicode_DATA(k), lp < lk ? lp : lk);
                if (c < 0 || (c == 0 && lp <= lk)) break;
                small_k[i] = prev;
                small_v[i] = small_v[i - 1];
                i--;
            }
            small_k[i] = k;
            small_v[i] = item;
        }
        if (ascii) {
            for (Py_ssize_t i = 0; i < m; i++) {
                Py_ssize_t at;
                if (put_tag(b, f) < 0 || (at = open_len(b)) < 0) return -1;
                if (put_string_value(b, TAG1_LEN, 1, small_k[i]) < 0 ||
                    (small_v[i] != Py_None && encode_value(b, f->value, small_v[i], depth) < 0) || close_len(b, at) < 0)
                    return -1;
            }
            return 0;
        }
    }
    PyObject *keys = PyDict_Keys(v);
    if (!keys || PyList_Sort(keys) < 0) {
        Py_XDECREF(keys);
        return -1;
    }
    int r = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys) && r == 0; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        PyObject *item = PyDict_GetItemWithError(v, k);
        Py_ssize_t at;
        if ((!item && PyErr_Occurred()) || put_tag(b, f) < 0 || (at = open_len(b)) < 0) {
            r = -1;
            break;
        }
        if (put_string_value(b, TAG1_LEN, 1, k) < 0 || (item != Py_None && encode_value(b, f->value, item, depth) < 0) ||
            close_len(b, at) < 0)
            r = -1;
    }
    Py_DECREF(keys);
    return r;
}

static int encode_field(Buf *b, const Field *f, PyObject *obj, PyObject *v, int depth) {
    if (!f->key) { /* inlined: the nested message reads this same object */
        Py_ssize_t at;
        int r;
        if (put_tag(b, f) < 0 || (at = open_msg(b, &msgs[f->msg], &r)) < 0) return -1;
        if (encode_message(b, &msgs[f->msg], obj, depth + 1) < 0) return -1;
        return close_msg(b, at, r, &msgs[f->msg]);
    }
    if (f->is_map) return encode_map(b, f, v, depth);
    if (f->repeated) {
        if (!PyList_Check(v)) {
            PyErr_Format(h_error, "field %s: expected a list", field_name(f));
            return -1;
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(v); j++) {
            PyObject *item = PyList_GET_ITEM(v, j);
            if (item != Py_None) {
                if (encode_value(b, f, item, depth) < 0) return -1;
            } else if (f->kind == K_RAW) { /* a null among JSON values (a schema's enum): a message with no raw */
                if (put_tag(b, f) < 0 || grow(b, 1) < 0) return -1;
                b->p[b->len++] = 0;
            }
        }
        return 0;
    }
    return encode_value(b, f, v, depth);
}

/* An object whose keys come in field-number order (objects as Go writes them, and as most clients send them),
 * written as its keys are read. 1 when done; 0 when a key came out of order, with nothing written. */
static int encode_in_order(Buf *b, Msg *m, PyObject *obj, int depth) {
    Py_ssize_t start = b->len, pos = 0;
    PyObject *k, *v;
    int last = -1;
    while (PyDict_Next(obj, &pos, &k, &v)) {
        if (v == Py_None) continue;
        int j = field_of(m, k);
        if (j < 0) continue;
        if (j < last) {
            b->len = start;
            return 0;
        }
        last = j;
        if (encode_field(b, &m->fields[j], obj, v, depth) < 0) return -1;
    }
    return 1;
}

/* The object's own keys are looked up in the message (not every field of the message in the object: most are
 * absent), and the fields found are written in field-number order, as Go writes them. */
static int encode_message(Buf *b, Msg *m, PyObject *obj, int depth) {
    if (depth > MAX_DEPTH) {
        PyErr_SetString(h_error, "object nested too deeply to encode");
        return -1;
    }
    /* objects of a type usually come all in order or all not: after one that was not, the next ones of its
     * type are sorted without trying (a try that fails has written and thrown away part of the object) */
    if (m->unordered > 0) {
        m->unordered--;
    } else if (!m->ninline) {
        int r = encode_in_order(b, m, obj, depth);
        if (r != 0) return r < 0 ? -1 : 0;
        m->unordered = 256;
    }
    int idx_small[64];
    PyObject *val_small[64];
    int *idx = idx_small;
    PyObject **val = val_small;
    if (m->nfields > 64) {
        idx = PyMem_Malloc(m->nfields * sizeof(int));
        val = PyMem_Malloc(m->nfields * sizeof(PyObject *));
        if (!idx || !val) {
            PyMem_Free(idx);
            PyMem_Free(val);
            PyErr_NoMemory();
            return -1;
        }
    }
    int n = 0, rc = 0;
    if (m->ninline) {
        for (int j = 0; j < m->nfields; j++) {
            if (!m->fields[j].key) {
                idx[n] = j;
                val[n++] = obj;
            }
        }
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(obj, &pos, &k, &v)) {
        if (v == Py_None) continue;
        int j = field_of(m, k);
        if (j < 0) continue;
        if (n >= m->nfields) break; /* cannot happen: a dict's keys are distinct */
        int i = n++;
        while (i > 0 && idx[i - 1] > j) { /* insertion sort: a handful of fields */
            idx[i] = idx[i - 1];
            val[i] = val[i - 1];
            i--;
        }
        idx[i] = j;
        val[i] = v;
    }
    for (int i = 0; i < n; i++) {
        if (encode_field(b, &m->fields[idx[i]], obj, val[i], depth) < 0) {
            rc = -1;
            break;
        }
    }
    if (idx != idx_small) {
        PyMem_Free(idx);
        PyMem_Free(val);
    }
    return rc;
}

/* The buffer encodings are written into, kept between calls (grown, never shrunk below its first size) so that
 * an encode costs no allocation but its result. A helper called back during an encode could run another
 * thread's encode: that one, finding the buffer taken, uses its own. */
static Buf scratch = {NULL, 0, 0};
static int scratch_taken = 0;
#define SCRATCH_KEEP (1 << 20) /* a buffer grown past this by one large list is given back after it */

/* The message index of a call's first argument, or -1 with an error set. */
static Py_ssize_t message_index(PyObject *arg) {
    Py_ssize_t index = PyLong_Check(arg) ? PyLong_AsSsize_t(arg) : -1;
    if (index == -1 && PyErr_Occurred()) return -1;
    if (index < 0 || index >= nmsgs) {
        PyErr_SetString(PyExc_IndexError, "no such message");
        return -1;
    }
    return index;
}

static PyObject *py_encode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "encode(index, obj): obj must be a dict");
        return NULL;
    }
    Py_ssize_t index = message_index(args[0]);
    if (index < 0) return NULL;
    PyObject *obj = args[1];
    int own = scratch_taken;
    Buf local = {NULL, 0, 0};
    Buf *b = own ? &local : &scratch;
    scratch_taken = 1;
    b->len = 0;
    PyObject *out = NULL;
    if (grow(b, 512) == 0 && encode_message(b, &msgs[index], obj, 0) == 0)
        out = PyBytes_FromStringAndSize((const char *)b->p, b->len);
    if (own) {
        PyMem_Free(local.p);
    } else {
        scratch_taken = 0;
        if (scratch.cap > SCRATCH_KEEP) {
            PyMem_Free(scratch.p);
            scratch.p = NULL;
            scratch.cap = 0;
        }
    }
    return out;
}

/* ---------------------------------------------------------------- decoding */

typedef struct {
    const unsigned char *p, *end;
} Reader;

static int read_varint_slow(Reader *r, uint64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    while (r->p < r->end) {
        unsigned char c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80) {
            *out = v;
            return 0;
        }
        shift += 7;
        if (shift >= 70) {
            PyErr_SetString(h_error, "proto: integer overflow");
            return -1;
        }
    }
    PyErr_SetString(h_error, "unexpected EOF");
    return -1;
}

/* Tags and most lengths are one byte: read those without the loop. */
static inline int read_varint(Reader *r, uint64_t *out) {
    if (r->p < r->end && *r->p < 0x80) {
        *out = *r->p++;
        return 0;
    }
    return read_varint_slow(r, out);
}

static int skip_field(Reader *r, int wire) {
    uint64_t n;
    switch (wire) {
    case 0:
        return read_varint(r, &n);
    case 1:
        n = 8;
        break;
    case 2:
        if (read_varint(r, &n) < 0) return -1;
        break;
    case 5:
        n = 4;
        break;
    default:
        PyErr_Format(h_error, "proto: illegal wireType %d", wire);
        return -1;
    }
    if (n > (uint64_t)(r->end - r->p)) {
        PyErr_SetString(h_error, "unexpected EOF");
        return -1;
    }
    r->p += n;
    return 0;
}

/* The next field: its number and wire type, its value for varints and 64-bit ones, and for length-delimited ones
 * the content's extent. */
static int next_field(Reader *r, uint32_t *number, int *wire, uint64_t *v, Reader *sub) {
    uint64_t key;
    if (read_varint(r, &key) < 0) return -1;
    *number = (uint32_t)(key >> 3);
    *wire = (int)(key & 7);
    if (*wire == 0) return read_varint(r, v);
    if (*wire == 1) { /* 64 bits, little-endian */
        if (r->end - r->p < 8) {
            PyErr_SetString(h_error, "unexpected EOF");
            return -1;
        }
        uint64_t x = 0;
        for (int i = 7; i >= 0; i--) x = x << 8 | r->p[i];
        *v = x;
        r->p += 8;
        return 0;
    }
    if (*wire == 2) {
        uint64_t n;
        if (read_varint(r, &n) < 0) return -1;
        if (n > (uint64_t)(r->end - r->p)) {
            PyErr_SetString(h_error, "unexpected EOF");
            return -1;
        }
        sub->p = r->p;
        sub->end = r->p + n;
        r->p += n;
        return 0;
    }
    return skip_field(r, *wire);
}

/* A wire type the codec does not read (32-bit), or 64 bits where the field is not a double: skipped. */
static inline int skipped(const Field *f, int wire) {
    return !(wire == 0 || wire == 2 || (wire == 1 && f->kind == K_DOUBLE));
}

static inline int64_t signed_of(uint64_t v, int int32) { return int32 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v; }

/* Short strings repeat across objects ("True", "TCP", "Running", label values, timestamps of one second): a
 * direct-mapped cache of str objects by their bytes answers them with a new reference to one object instead
 * of a new string each time (str is immutable, so sharing is safe). */
#define STR_CACHE 1024
#define STR_CACHE_MAX 24
static PyObject *str_cache[STR_CACHE];

static PyObject *text(const Reader *s) {
    Py_ssize_t n = s->end - s->p;
    uint32_t slot = 0;
    if (n <= STR_CACHE_MAX) {
        uint32_t h = 2166136261u; /* FNV-1a, and whether every byte is ASCII, in one pass */
        unsigned char high = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            high |= s->p[i];
            h = (h ^ s->p[i]) * 16777619u;
        }
        if (high & 0x80) return PyUnicode_DecodeUTF8((const char *)s->p, n, "replace");
        slot = h & (STR_CACHE - 1);
        PyObject *hit = str_cache[slot];
        if (hit && PyUnicode_GET_LENGTH(hit) == n && memcmp(PyUnicode_DATA(hit), s->p, n) == 0)
            return Py_NewRef(hit);
    } else {
        uint64_t high = 0, w;
        Py_ssize_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, s->p + i, 8);
            high |= w;
        }
        for (; i < n; i++) high |= s->p[i];
        if (high & 0x8080808080808080ull) return PyUnicode_DecodeUTF8((const char *)s->p, n, "replace");
    }
    PyObject *out = PyUnicode_New(n, 127); /* ASCII: the bytes are the characters */
    if (!out) return NULL;
    memcpy(PyUnicode_DATA(out), s->p, n);
    if (n <= STR_CACHE_MAX) Py_XSETREF(str_cache[slot], Py_NewRef(out));
    return out;
}

static int decode_message(const Msg *m, Reader *r, PyObject *out, int depth);

/* A dict for a message of type `m`, sized for as many keys as the last one of its type ended with (objects of
 * a type keep to a shape: growing a dict as keys arrive costs more than a guess that is sometimes wrong). */
static inline PyObject *new_dict_for(const Msg *m) {
    return m->keyhint > 5 ? _PyDict_NewPresized(m->keyhint) : PyDict_New();
}

static int wrong_wire(const Field *f, int wire) {
    PyErr_Format(h_error, "proto: wrong wireType = %d for field %s", wire, field_name(f));
    return -1;
}

/* A new reference to the field's value. */
/* The fields numbered 1 to 3 of a small message that stands for a JSON scalar (Timestamp, Duration, Quantity,
 * IntOrString, RawExtension): the last varint and the last length-delimited value of each, zero or empty when
 * absent. */
typedef struct {
    int64_t v[4];
    Reader s[4];
} Small;

static int read_small(Reader *s, Small *m) {
    memset(m, 0, sizeof *m);
    while (s->p < s->end) {
        uint32_t n;
        int w;
        uint64_t x = 0;
        Reader sub = {NULL, NULL};
        if (next_field(s, &n, &w, &x, &sub) < 0) return -1;
        if (n < 4 && w == 0) m->v[n] = (int64_t)x;
        else if (n < 4 && w == 2) m->s[n] = sub;
    }
    return 0;
}

static PyObject *decode_value(const Field *f, int wire, uint64_t v, Reader *s, int depth);

/* A JSONSchemaPropsOr* message as its MarshalJSON writes it: a non-empty list, else the object, else the bool (or
 * None, for the messages without one). */
static PyObject *decode_union(const Field *f, Reader *s, int depth) {
    const Msg *u = &msgs[f->msg];
    PyObject *obj = NULL, *list = NULL, *res = NULL;
    int flag = 0;
    while (s->p < s->end) {
        uint32_t n;
        int w;
        uint64_t x = 0;
        Reader sub = {NULL, NULL};
        if (next_field(s, &n, &w, &x, &sub) < 0) goto done;
        if (n > u->maxnum || u->by_number[n] < 0) continue;
        int j = u->by_number[n];
        const Field *g = &u->fields[j];
        if (skipped(g, w) || (j != u->u_obj && j != u->u_list && j != u->u_flag)) continue;
        PyObject *item = decode_value(g, w, x, &sub, depth + 1);
        if (!item) goto done;
        if (j == u->u_list) {
            if (!list && !(list = PyList_New(0))) {
                Py_DECREF(item);
                goto done;
            }
            int rc = PyList_Append(list, item);
            Py_DECREF(item);
            if (rc < 0) goto done;
        } else if (j == u->u_obj) {
            Py_XSETREF(obj, item);
        } else {
            flag = item == Py_True;
            Py_DECREF(item);
        }
    }
    if (list && PyList_GET_SIZE(list) > 0) res = Py_NewRef(list);
    else if (obj) res = Py_NewRef(obj);
    else if (u->u_flag >= 0) res = PyBool_FromLong(flag);
    else res = Py_NewRef(Py_None);
done:
    Py_XDECREF(obj);
    Py_XDECREF(list);
    return res;
}

static PyObject *decode_value(const Field *f, int wire, uint64_t v, Reader *s, int depth) {
    int kind = f->kind;
    if (kind == K_INT || kind == K_BOOL) {
        if (wire != 0) return wrong_wire(f, wire), NULL;
        if (kind == K_BOOL) return PyBool_FromLong(v != 0);
        return PyLong_FromLongLong(signed_of(v, f->int32));
    }
    if (kind == K_DOUBLE) {
        if (wire != 1) return wrong_wire(f, wire), NULL;
        double d;
        memcpy(&d, &v, 8);
        /* a float64 that holds an integer is that integer, as Go writes it (types.codec.go_float) */
        if (isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0) return PyLong_FromDouble(d);
        return PyFloat_FromDouble(d);
    }
    if (wire != 2) return wrong_wire(f, wire), NULL;
    switch (kind) {
    case K_STRING:
        return text(s);
    case K_MESSAGE: {
        Msg *sm = &msgs[f->msg];
        PyObject *d = new_dict_for(sm);
        if (!d) return NULL;
        if (decode_message(sm, s, d, depth + 1) < 0) {
            Py_DECREF(d);
            return NULL;
        }
        sm->keyhint = (int)PyDict_GET_SIZE(d);
        return d;
    }
    case K_BYTES: {
        PyObject *raw = PyBytes_FromStringAndSize((const char *)s->p, s->end - s->p);
        if (!raw) return NULL;
        PyObject *res = PyObject_CallOneArg(h_b64encode, raw);
        Py_DECREF(raw);
        return res;
    }
    case K_TIME:
    case K_MICRO_TIME: {
        if (s->p == s->end) Py_RETURN_NONE; /* Go's zero time */
        Small m;
        if (read_small(s, &m) < 0) return NULL;
        return format_time(m.v[1], kind == K_MICRO_TIME ? (int32_t)m.v[2] : 0, kind == K_MICRO_TIME);
    }
    case K_DURATION: {
        Small m;
        if (read_small(s, &m) < 0) return NULL;
        return PyObject_CallFunction(h_duration_format, "L", (long long)m.v[1]);
    }
    case K_QUANTITY: {
        Small m;
        if (read_small(s, &m) < 0) return NULL;
        if (!m.s[1].p || m.s[1].p == m.s[1].end) return PyUnicode_FromString("0");
        return text(&m.s[1]);
    }
    case K_INT_OR_STRING: {
        Small m;
        if (read_small(s, &m) < 0) return NULL;
        if (m.v[1] == 1) return m.s[3].p ? text(&m.s[3]) : PyUnicode_FromString("");
        return PyLong_FromLongLong((int32_t)m.v[2]);
    }
    case K_RAW: {
        Small m;
        if (read_small(s, &m) < 0) return NULL;
        const unsigned char *rp = m.s[1].p, *re = m.s[1].end;
        PyObject *raw = PyBytes_FromStringAndSize((const char *)rp, rp ? re - rp : 0);
        if (!raw) return NULL;
        /* JSON text (what every Go client writes) straight to the JSON parser; anything else to the helper */
        int json = rp && re - rp >= 2 && (rp[0] == '{' || rp[0] == '[');
        PyObject *res = PyObject_CallOneArg(json ? h_json_loads : h_raw_value, raw);
        if (!res && json) { /* the helper says what is wrong with it, as the reference codec does */
            PyErr_Clear();
            res = PyObject_CallOneArg(h_raw_value, raw);
        }
        Py_DECREF(raw);
        return res;
    }
    case K_UNION:
        return decode_union(f, s, depth);
    case K_STRING_LIST: {
        PyObject *list = PyList_New(0);
        if (!list) return NULL;
        uint32_t n;
        int w;
        uint64_t x;
        Reader sub;
        while (s->p < s->end) {
            if (next_field(s, &n, &w, &x, &sub) < 0) goto fail;
            if (n == 1 && w == 2) {
                PyObject *t = text(&sub);
                if (!t || PyList_Append(list, t) < 0) {
                    Py_XDECREF(t);
                    goto fail;
                }
                Py_DECREF(t);
            }
        }
        return list;
    fail:
        Py_DECREF(list);
        return NULL;
    }
    }
    PyErr_SetString(PyExc_SystemError, "unknown field kind");
    return NULL;
}

static PyObject *zero_of(const Field *f) {
    switch (f->kind) {
    case K_STRING:
    case K_BYTES:
        return PyUnicode_FromString("");
    case K_BOOL:
        Py_RETURN_FALSE;
    case K_INT:
        return PyLong_FromLong(0);
    case K_MESSAGE:
        return PyDict_New();
    case K_QUANTITY:
        return PyUnicode_FromString("0");
    case K_STRING_LIST:
        return PyList_New(0);
    }
    Py_RETURN_NONE;
}

/* The list (or dict) under `key` in `out`, created when missing: a borrowed reference. */
static PyObject *container(PyObject *out, PyObject *key, int dict) {
    PyObject *c = PyDict_GetItemWithError(out, key);
    if (c) {
        if (dict ? PyDict_Check(c) : PyList_Check(c)) return c;
    } else if (PyErr_Occurred()) {
        return NULL;
    }
    c = dict ? PyDict_New() : PyList_New(0);
    if (!c) return NULL;
    int r = PyDict_SetItem(out, key, c);
    Py_DECREF(c);
    return r < 0 ? NULL : c;
}

static int decode_message(const Msg *m, Reader *r, PyObject *out, int depth) {
    if (depth > MAX_DEPTH) {
        PyErr_SetString(h_error, "proto: message nested too deeply");
        return -1;
    }
    const Field *run_field = NULL; /* the repeated field the last item was appended to, and its list (borrowed) */
    PyObject *run_list = NULL;
    while (r->p < r->end) {
        uint32_t number;
        int wire;
        uint64_t v = 0;
        Reader sub = {NULL, NULL};
        if (next_field(r, &number, &wire, &v, &sub) < 0) return -1;
        if (number > m->maxnum || m->by_number[number] < 0) continue;
        const Field *f = &m->fields[m->by_number[number]];
        if (skipped(f, wire)) continue;
        if (f != run_field) run_field = NULL; /* another field ends the run (and might have replaced the list) */
        if (!f->key) {
            if (wire != 2) return wrong_wire(f, wire);
            if (decode_message(&msgs[f->msg], &sub, out, depth + 1) < 0) return -1;
        } else if (f->is_map) {
            if (wire != 2) return wrong_wire(f, wire);
            PyObject *key = NULL, *value = NULL;
            while (sub.p < sub.end) {
                uint32_t n;
                int w;
                uint64_t x;
                Reader s2 = {NULL, NULL};
                if (next_field(&sub, &n, &w, &x, &s2) < 0) goto map_fail;
                if (n == 1 && w == 2) {
                    Py_XDECREF(key);
                    if (!(key = text(&s2))) goto map_fail;
                } else if (n == 2) {
                    Py_XDECREF(value);
                    if (!(value = decode_value(f->value, w, x, &s2, depth + 1))) goto map_fail;
                }
            }
            if (!key && !(key = PyUnicode_FromString(""))) goto map_fail;
            if (!value && !(value = zero_of(f->value))) goto map_fail;
            PyObject *d = container(out, f->key, 1);
            if (!d || PyDict_SetItem(d, key, value) < 0) goto map_fail;
            Py_DECREF(key);
            Py_DECREF(value);
            continue;
        map_fail:
            Py_XDECREF(key);
            Py_XDECREF(value);
            return -1;
        } else if (f->repeated) {
            /* a repeated field's items come one after another: its list is looked up once for the run */
            PyObject *list = f == run_field ? run_list : container(out, f->key, 0);
            if (!list) return -1;
            run_field = f;
            run_list = list;
            if (wire == 2 && (f->kind == K_INT || f->kind == K_BOOL)) { /* packed */
                while (sub.p < sub.end) {
                    uint64_t x;
                    if (read_varint(&sub, &x) < 0) return -1;
                    PyObject *item = f->kind == K_BOOL ? PyBool_FromLong(x != 0)
                                                       : PyLong_FromLongLong(signed_of(x, f->int32));
                    if (!item || PyList_Append(list, item) < 0) {
                        Py_XDECREF(item);
                        return -1;
                    }
                    Py_DECREF(item);
                }
                continue;
            }
            PyObject *item = decode_value(f, wire, v, &sub, depth);
            if (!item || PyList_Append(list, item) < 0) {
                Py_XDECREF(item);
                return -1;
            }
            Py_DECREF(item);
        } else {
            PyObject *item = decode_value(f, wire, v, &sub, depth);
            /* the key is interned and its hash known: no lookup of either */
            if (!item || _PyDict_SetItem_KnownHash(out, f->key, item, f->hash) < 0) {
                Py_XDECREF(item);
                return -1;
            }
            Py_DECREF(item);
        }
    }
    return 0;
}

static PyObject *py_decode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3 || (nargs == 3 && !PyDict_Check(args[2]))) {
        PyErr_SetString(PyExc_TypeError, "decode(index, data, into=None): into must be a dict");
        return NULL;
    }
    Py_ssize_t index = message_index(args[0]);
    if (index < 0) return NULL;
    PyObject *into = nargs == 3 ? args[2] : NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) return NULL;
    Reader r = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len};
    PyObject *out = into ? Py_NewRef(into) : new_dict_for(&msgs[index]);
    if (!out) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int rc = decode_message(&msgs[index], &r, out, 0);
    PyBuffer_Release(&view);
    if (!into) msgs[index].keyhint = (int)PyDict_GET_SIZE(out);
    if (rc < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------- loading the schema */

static void free_schema(void) {
    for (Py_ssize_t i = 0; i < nmsgs; i++) {
        for (int j = 0; j < msgs[i].nfields; j++) {
            Field *f = &msgs[i].fields[j];
            Py_XDECREF(f->key);
            if (f->value) PyMem_Free(f->value);
        }
        PyMem_Free(msgs[i].fields);
        PyMem_Free(msgs[i].by_number);
        PyMem_Free(msgs[i].slots);
        if (msgs[i].ptr_cache) {
            for (int k = 0; k < PTR_CACHE; k++) Py_XDECREF(msgs[i].ptr_cache[k].key);
            PyMem_Free(msgs[i].ptr_cache);
        }
    }
    PyMem_Free(msgs);
    msgs = NULL;
    nmsgs = 0;
}

/* (number, key or None, kind, repeated, is_map, int32, message index, tag, value spec or None) */
static int load_field(Field *f, PyObject *spec) {
    PyObject *key, *tag, *value;
    unsigned int number;
    if (!PyArg_ParseTuple(spec, "IOiiiiiSO", &number, &key, &f->kind, &f->repeated, &f->is_map, &f->int32, &f->msg,
                          &tag, &value))
        return -1;
    f->number = number;
    if (key != Py_None) {
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "a field's key must be a str");
            return -1;
        }
        Py_INCREF(key);
        PyUnicode_InternInPlace(&key);
        f->key = key;
    }
    if (PyBytes_GET_SIZE(tag) > (Py_ssize_t)sizeof f->tag) {
        PyErr_SetString(PyExc_ValueError, "tag too long");
        return -1;
    }
    f->taglen = (int)PyBytes_GET_SIZE(tag);
    memcpy(f->tag, PyBytes_AS_STRING(tag), f->taglen);
    if (value != Py_None) {
        f->value = PyMem_Calloc(1, sizeof(Field));
        if (!f->value) {
            PyErr_NoMemory();
            return -1;
        }
        if (load_field(f->value, value) < 0) return -1;
    }
    if (((f->kind == K_MESSAGE && !f->is_map) || f->kind == K_UNION) && (f->msg < 0)) {
        PyErr_SetString(PyExc_ValueError, "a message field without a message");
        return -1;
    }
    return 0;
}

static PyObject *py_load(PyObject *self, PyObject *args) {
    PyObject *spec, *helpers;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &spec, &PyDict_Type, &helpers)) return NULL;
    const char *names[] = {"json_loads", "error", "time_parse", "time_format", "duration_parse", "duration_format",
                           "quantity_text", "b64decode", "b64encode", "raw_dumps", "raw_value"};
    PyObject **slots[] = {&h_json_loads, &h_error, &h_time_parse, &h_time_format, &h_duration_parse, &h_duration_format,
                          &h_quantity_text, &h_b64decode, &h_b64encode, &h_raw_dumps, &h_raw_value};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        PyObject *h = PyDict_GetItemString(helpers, names[i]);
        if (!h) return PyErr_Format(PyExc_KeyError, "helper %s missing", names[i]);
        Py_XSETREF(*slots[i], Py_NewRef(h));
    }
    free_schema();
    Py_ssize_t n = PyList_GET_SIZE(spec);
    msgs = PyMem_Calloc(n ? n : 1, sizeof(Msg));
    if (!msgs) return PyErr_NoMemory();
    nmsgs = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *fields = PyList_GET_ITEM(spec, i);
        if (!PyList_Check(fields)) goto fail;
        Msg *m = &msgs[i];
        m->nfields = (int)PyList_GET_SIZE(fields);
        m->fields = PyMem_Calloc(m->nfields ? m->nfields : 1, sizeof(Field));
        if (!m->fields) goto nomem;
        uint32_t maxnum = 0;
        for (int j = 0; j < m->nfields; j++) {
            if (load_field(&m->fields[j], PyList_GET_ITEM(fields, j)) < 0) goto error;
            if (m->fields[j].msg >= n) goto fail;
            if (m->fields[j].number > maxnum) maxnum = m->fields[j].number;
        }
        if (maxnum > 10000) goto fail;
        m->maxnum = maxnum;
        m->by_number = PyMem_Malloc((maxnum + 1) * sizeof(int16_t));
        if (!m->by_number) goto nomem;
        for (uint32_t k = 0; k <= maxnum; k++) m->by_number[k] = -1;
        for (int j = 0; j < m->nfields; j++) m->by_number[m->fields[j].number] = (int16_t)j;
        /* the fields a K_UNION field's value goes to, by its shape (schema.union_parts chooses alike) */
        m->u_obj = m->u_list = m->u_flag = -1;
        for (int j = m->nfields - 1; j >= 0; j--) {
            const Field *g = &m->fields[j];
            if (g->kind == K_MESSAGE && !g->repeated && !g->is_map) m->u_obj = j;
            if (g->repeated) m->u_list = j;
            if (g->kind == K_BOOL && !g->repeated) m->u_flag = j;
        }
        Py_hash_t size = 8;
        while (size < 2 * m->nfields + 2) size *= 2;
        m->mask = size - 1;
        if (!(m->slots = PyMem_Calloc(size, sizeof(Slot)))) goto nomem;
        for (Py_hash_t k = 0; k < size; k++) m->slots[k].idx = -1;
        for (int j = 0; j < m->nfields; j++) {
            Field *f = &m->fields[j];
            if (!f->key) {
                m->ninline++;
                continue;
            }
            if ((f->hash = PyObject_Hash(f->key)) == -1) goto error;
            Py_hash_t k = f->hash & m->mask;
            while (m->slots[k].idx >= 0) k = (k + 1) & m->mask;
            m->slots[k].key = f->key;
            m->slots[k].hash = f->hash;
            m->slots[k].idx = j;
        }
    }
    Py_RETURN_NONE;
nomem:
    PyErr_NoMemory();
    goto error;
fail:
    PyErr_SetString(PyExc_ValueError, "malformed schema");
error:
    free_schema();
    return NULL;
}

/* k8s\0 + runtime.Unknown{typeMeta{apiVersion, kind}, raw}: the envelope of an encoded object. With `prefix`,
 * raw is written after it (a list's items, already encoded, follow their list's metadata). */
static PyObject *py_envelope(PyObject *self, PyObject *args) {
    const char *av, *kind;
    Py_ssize_t avn, kindn;
    Py_buffer raw;
    if (!PyArg_ParseTuple(args, "s#s#y*", &av, &avn, &kind, &kindn, &raw)) return NULL;
    Buf b = {NULL, 0, 0};
    Py_ssize_t tm = 1 + varint_size((uint64_t)avn) + avn + 1 + varint_size((uint64_t)kindn) + kindn;
    int ok = grow(&b, 4 + 1 + 10 + tm + 1 + 10 + raw.len) == 0;
    if (ok) {
        memcpy(b.p, "k8s\0", 4);
        b.len = 4;
        b.p[b.len++] = 0x0a;
        put_varint(&b, (uint64_t)tm);
        put_bytes_field(&b, TAG1_LEN, 1, av, avn);
        put_bytes_field(&b, (const unsigned char *)"\x12", 1, kind, kindn);
        put_bytes_field(&b, (const unsigned char *)"\x12", 1, (const char *)raw.buf, raw.len);
    }
    PyBuffer_Release(&raw);
    if (!ok) {
        PyMem_Free(b.p);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize((const char *)b.p, b.len);
    PyMem_Free(b.p);
    return out;
}

/* (apiVersion, kind, raw) of an enveloped body; the raw message as a memoryview of `data`. Errors as the
 * reference codec's `unwrap` words them. */
static PyObject *py_unwrap(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = view.buf;
    PyObject *res = NULL;
    if (view.len == 0) {
        PyErr_SetString(h_error, "empty data");
        goto done;
    }
    if (view.len < 4 || memcmp(p, "k8s\0", 4) != 0) {
        PyErr_SetString(h_error,
                        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]");
        goto done;
    }
    if (view.len == 4) {
        PyErr_SetString(h_error, "empty body");
        goto done;
    }
    Reader r = {p + 4, p + view.len}, av = {NULL, NULL}, kind = {NULL, NULL}, raw = {p + view.len, p + view.len};
    while (r.p < r.end) {
        uint32_t n;
        int w;
        uint64_t x;
        Reader sub = {NULL, NULL};
        if (next_field(&r, &n, &w, &x, &sub) < 0) goto done;
        if (n == 1 && w == 2) {
            while (sub.p < sub.end) {
                uint32_t n2;
                int w2;
                uint64_t x2;
                Reader s2 = {NULL, NULL};
                if (next_field(&sub, &n2, &w2, &x2, &s2) < 0) goto done;
                if (n2 == 1 && w2 == 2) av = s2;
                else if (n2 == 2 && w2 == 2) kind = s2;
            }
        } else if (n == 2 && w == 2) {
            raw = sub;
        }
    }
    PyObject *avs = av.p ? text(&av) : PyUnicode_FromString("");
    PyObject *ks = kind.p ? text(&kind) : PyUnicode_FromString("");
    PyObject *mv = PyMemoryView_FromObject(arg);
    PyObject *slice = NULL;
    if (avs && ks && mv) slice = PySequence_GetSlice(mv, raw.p - p, raw.end - p);
    if (slice) res = PyTuple_Pack(3, avs, ks, slice);
    Py_XDECREF(avs);
    Py_XDECREF(ks);
    Py_XDECREF(mv);
    Py_XDECREF(slice);
done:
    PyBuffer_Release(&view);
    return res;
}

static PyMethodDef methods[] = {
    {"envelope", py_envelope, METH_VARARGS, "envelope(apiVersion, kind, raw) -> bytes."},
    {"unwrap", py_unwrap, METH_O, "unwrap(data) -> (apiVersion, kind, raw memoryview)."},
    {"load", py_load, METH_VARARGS, "load(schema, helpers): the compiled messages and the Python helpers."},
    {"encode", (PyCFunction)(void (*)(void))py_encode, METH_FASTCALL, "encode(index, obj) -> bytes: a dict as message `index`."},
    {"decode", (PyCFunction)(void (*)(void))py_decode, METH_FASTCALL, "decode(index, data, into=None) -> dict: message `index` as a dict."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpb", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastpb(void) { return PyModule_Create(&module); }
