/* bootlog._linecut: the reader's and the parser's hot loops in native code (optional).
 *
 * Each function here is only a faster way to what Python code does (named below): where this
 * module was not built, that code runs, and the tests hold the two to the same output.  Its
 * whole reason is speed: e.g. numpy's line cut passes over each block twice and needs numpy,
 * whose import alone is ~60 ms of the reader's time.
 *
 * cut(block, hits, lineno) -> (nums, blob, newlines)
 *   block:    a bytes-like block of the log
 *   hits:     a list of offsets into block (any order, repeats allowed), each inside a line
 *   lineno:   the line number of block's first line
 *   nums:     the line numbers of the lines holding a hit, ascending, as native int64 bytes
 *   blob:     those lines joined by "\n", each without a "\r" before its newline and then
 *             without a leading UTF-8 BOM (as the per-line path cuts them)
 *   newlines: the number of "\n" bytes in block
 *
 * clean(block) -> True when the block holds no ESC and no NUL byte (scan._clean_block's test).
 *
 * podman_lines(block) -> (starts, ends, usual): the same for scan._podman_table's line table of
 * a podman -t block: each line's start and end offsets (native int64 bytes) and whether it is in
 * the usual shape (one byte, 0 or 1).  PODMAN_STAMP: the stamp's shape it reads.
 *
 * stats_run(texts, i, ...) -> (j, name, pid, times, rows): parse._stats_lines for the lines it
 * takes (see "stats runs" below).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_ssize(const void *a, const void *b)
{
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* "\n" bytes in p[0:n] (16 at a time where SSE2 is there: every x86-64 has it) */
static Py_ssize_t count_nl(const char *p, Py_ssize_t n)
{
    Py_ssize_t c = 0, i = 0;
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (i + 16 <= n) {
        /* per-byte counters (a match is -1: subtracting it adds one), summed before any of
           them can pass 255 */
        __m128i acc = zero;
        for (int k = 0; k < 255 && i + 16 <= n; k++, i += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i)), nl));
        __m128i sums = _mm_sad_epu8(acc, zero);
        c += _mm_cvtsi128_si32(sums) + _mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
    }
#endif
    for (; i < n; i++)
        c += p[i] == '\n';
    return c;
}

/* the offset after the last "\n" in p[from:to], or -1 if there is none */
static Py_ssize_t after_last_nl(const char *p, Py_ssize_t from, Py_ssize_t to)
{
    for (Py_ssize_t i = to; i > from; i--)
        if (p[i - 1] == '\n')
            return i;
    return -1;
}

static PyObject *cut(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    PyObject *hits, *seq = NULL, *out = NULL, *nums = NULL, *blob = NULL;
    long long lineno;
    Py_ssize_t *at = NULL, *spans = NULL;
    int64_t *lines = NULL;

    if (!PyArg_ParseTuple(args, "y*OL", &buf, &hits, &lineno))
        return NULL;
    seq = PySequence_Fast(hits, "hits must be a sequence of offsets");
    if (seq == NULL)
        goto done;
    const char *b = (const char *)buf.buf;
    Py_ssize_t size = buf.len, n = PySequence_Fast_GET_SIZE(seq);
    at = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    spans = PyMem_Malloc(2 * sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    lines = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (at == NULL || spans == NULL || lines == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int sorted = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t h = PyLong_AsSsize_t(items[i]);
        if (h == -1 && PyErr_Occurred())
            goto done;
        if (h < 0 || h >= size) {
            PyErr_SetString(PyExc_ValueError, "hit offset outside the block");
            goto done;
        }
        if (i && h < at[i - 1])
            sorted = 0;
        at[i] = h;
    }
    if (!sorted)
        qsort(at, (size_t)n, sizeof(Py_ssize_t), cmp_ssize);

    /* walk the block once: `pos` is where counting stopped, `ls` the start of its line,
       `seen` the newlines before pos */
    Py_ssize_t pos = 0, ls = 0, seen = 0, taken = 0, total = 0, line_end = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t h = at[i];
        if (h <= line_end)
            continue; /* another hit in the line just taken */
        Py_ssize_t got = after_last_nl(b, pos, h);
        if (got >= 0) {
            ls = got;
            seen += count_nl(b + pos, h - pos);
        }
        pos = h;
        const char *e = memchr(b + h, '\n', (size_t)(size - h));
        Py_ssize_t end = e != NULL ? e - b : size;
        line_end = end;
        Py_ssize_t s = ls, stop = end;
        if (stop > s && b[stop - 1] == '\r')
            stop--;
        if (stop - s >= 3 && (unsigned char)b[s] == 0xEF && (unsigned char)b[s + 1] == 0xBB &&
            (unsigned char)b[s + 2] == 0xBF)
            s += 3;
        spans[2 * taken] = s;
        spans[2 * taken + 1] = stop;
        lines[taken] = (int64_t)((uint64_t)lineno + (uint64_t)seen); /* (wraps as numpy's int64 does) */
        total += stop - s;
        taken++;
    }
    seen += count_nl(b + pos, size - pos);

    nums = PyBytes_FromStringAndSize((const char *)lines, (Py_ssize_t)sizeof(int64_t) * taken);
    blob = PyBytes_FromStringAndSize(NULL, total + (taken ? taken - 1 : 0));
    if (nums == NULL || blob == NULL)
        goto done;
    char *w = PyBytes_AS_STRING(blob);
    for (Py_ssize_t k = 0; k < taken; k++) {
        if (k)
            *w++ = '\n';
        Py_ssize_t len = spans[2 * k + 1] - spans[2 * k];
        memcpy(w, b + spans[2 * k], (size_t)len);
        w += len;
    }
    out = Py_BuildValue("(OOn)", nums, blob, seen);

done:
    Py_XDECREF(nums);
    Py_XDECREF(blob);
    Py_XDECREF(seq);
    PyMem_Free(at);
    PyMem_Free(spans);
    PyMem_Free(lines);
    PyBuffer_Release(&buf);
    return out;
}

/* podman's stamp "dddd-dd-ddTdd:dd:dd.dddddddddZ " (31 bytes): 'd' a digit, the rest as is */
static const char STAMP[] = "dddd-dd-ddTdd:dd:dd.dddddddddZ ";

static int stamped(const unsigned char *p)
{
    for (int i = 0; i < 31; i++) {
        if (STAMP[i] == 'd' ? (p[i] < '0' || p[i] > '9') : p[i] != (unsigned char)STAMP[i])
            return 0;
    }
    return 1;
}

static PyObject *podman_lines(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    PyObject *out = NULL, *starts = NULL, *ends = NULL, *usual = NULL;

    if (!PyArg_ParseTuple(args, "y*", &buf))
        return NULL;
    const char *b = (const char *)buf.buf;
    Py_ssize_t size = buf.len;
    /* one line per newline, and one more for bytes after the last newline (or an empty block) */
    Py_ssize_t n = count_nl(b, size);
    if (size == 0 || b[size - 1] != '\n')
        n++;
    starts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int64_t) * n);
    ends = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int64_t) * n);
    usual = PyBytes_FromStringAndSize(NULL, n);
    if (starts == NULL || ends == NULL || usual == NULL)
        goto done;
    int64_t *ls = (int64_t *)PyBytes_AS_STRING(starts), *le = (int64_t *)PyBytes_AS_STRING(ends);
    char *u = PyBytes_AS_STRING(usual);
    Py_ssize_t s = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s > size)
            s = size; /* (only if the bytes changed under the count: never read past them) */
        const char *nl = memchr(b + s, '\n', (size_t)(size - s));
        Py_ssize_t e = nl != NULL ? nl - b : size;
        int ok = e - s >= 31 && stamped((const unsigned char *)b + s);
        /* ... and no "Z " after the stamp (it may start an embedded stamp) */
        for (Py_ssize_t z = s + 31; ok && z + 1 < e; z++) {
            const char *q = memchr(b + z, 'Z', (size_t)(e - 1 - z));
            if (q == NULL)
                break;
            z = q - b;
            if (b[z + 1] == ' ')
                ok = 0;
        }
        ls[i] = s;
        le[i] = e;
        u[i] = (char)ok;
        s = e + 1;
    }
    out = PyTuple_Pack(3, starts, ends, usual);

done:
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    Py_XDECREF(usual);
    PyBuffer_Release(&buf);
    return out;
}

static PyObject *clean(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf))
        return NULL;
    int ok = memchr(buf.buf, 0x1b, (size_t)buf.len) == NULL && memchr(buf.buf, 0, (size_t)buf.len) == NULL;
    PyBuffer_Release(&buf);
    return PyBool_FromLong(ok);
}

/* ---------------------------------------------------------------- stats runs
 *
 * parse._stats_lines reads runs of everyday stats lines with a regex: parse._FAST_PREFIX, then a
 * body of literal text and figures in their canonical spelling (parse._canonical).  stats_run
 * reads the same lines here, but only ASCII lines whose file part ("[loggers.py:259]") is
 * printable: a line it takes, the regex takes with the same groups; a line it does not take
 * ends the run, and parse.py reads it the regex's way.  STATS_PREFIX is the prefix this code
 * reads: parse.py uses it only while _FAST_PREFIX is that text. */

#define STATS_PREFIX_TEXT \
    "(?:\\((?P<name>[A-Za-z_][\\w\\-]*) pid=(?P<pid>\\d+)\\) )?(?:DEBUG|INFO|WARNING) " \
    "(?P<mo>\\d\\d)-(?P<d>\\d\\d) (?P<h>\\d\\d):(?P<mi>\\d\\d):(?P<s>\\d\\d) \\[?[^\\s\\]]+?:\\d+\\] "

#define MAX_FIGS 32

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int starts(const char *s, Py_ssize_t len, Py_ssize_t p, const char *lit, Py_ssize_t n)
{
    return p + n <= len && memcmp(s + p, lit, (size_t)n) == 0;
}

/* a canonical figure at s[p:]: "F" -?(?:0|[1-9][0-9]{0,11})\.(?:0|[0-9]{0,2}[1-9]), "I" the
   same integer part alone; the end offset, or -1.  The text after a figure never starts with a
   digit (parse.py checks the literals), so the longest run of digits is the regex's choice. */
static Py_ssize_t figure(const char *s, Py_ssize_t len, Py_ssize_t p, char kind)
{
    if (kind == 'F' && p < len && s[p] == '-')
        p++;
    Py_ssize_t q = p;
    while (q < len && is_digit(s[q]))
        q++;
    if (q == p || q - p > 12 || (s[p] == '0' && q - p > 1))
        return -1;
    if (kind == 'I')
        return q;
    if (q >= len || s[q] != '.')
        return -1;
    p = ++q;
    while (q < len && is_digit(s[q]))
        q++;
    Py_ssize_t m = q - p;
    if (m == 1 && s[p] == '0')
        return q;
    if (m < 1 || m > 3 || s[q - 1] == '0')
        return -1;
    return q;
}

typedef struct {
    Py_ssize_t name0, name1, pid0, pid1; /* name0 < 0: no tag */
    Py_ssize_t time; /* offset of "MM-DD HH:MM:SS" */
    Py_ssize_t fig0[MAX_FIGS], fig1[MAX_FIGS];
} stats_line;

/* the prefix and body of one line; 0 if this code does not take it */
static int stats_parse(const char *s, Py_ssize_t len, const char **lits, const Py_ssize_t *litn,
                       const char *kinds, Py_ssize_t nk, int lead, stats_line *out)
{
    Py_ssize_t p = 0;
    out->name0 = out->name1 = out->pid0 = out->pid1 = -1;
    if (len > 0 && s[0] == '(') {
        p = 1;
        if (!(p < len && ((s[p] >= 'A' && s[p] <= 'Z') || (s[p] >= 'a' && s[p] <= 'z') || s[p] == '_')))
            return 0;
        out->name0 = p++;
        while (p < len && ((s[p] >= 'A' && s[p] <= 'Z') || (s[p] >= 'a' && s[p] <= 'z') || is_digit(s[p]) ||
                           s[p] == '_' || s[p] == '-'))
            p++;
        out->name1 = p;
        if (!starts(s, len, p, " pid=", 5))
            return 0;
        p += 5;
        out->pid0 = p;
        while (p < len && is_digit(s[p]))
            p++;
        out->pid1 = p;
        if (p == out->pid0 || !starts(s, len, p, ") ", 2))
            return 0;
        p += 2;
    }
    if (starts(s, len, p, "INFO ", 5))
        p += 5;
    else if (starts(s, len, p, "DEBUG ", 6))
        p += 6;
    else if (starts(s, len, p, "WARNING ", 8))
        p += 8;
    else
        return 0;
    /* "MM-DD HH:MM:SS " */
    static const char shape[] = "dd-dd dd:dd:dd ";
    if (p + 15 > len)
        return 0;
    for (int k = 0; k < 15; k++) {
        if (shape[k] == 'd' ? !is_digit(s[p + k]) : s[p + k] != shape[k])
            return 0;
    }
    out->time = p;
    p += 15;
    /* \[?[^\s\]]+?:\d+\] : printable ASCII up to the first "]", which a space follows, and before
       it ":" and digits, the ":" not the part's first character */
    Py_ssize_t p0 = p, r = p;
    while (r < len && s[r] >= 0x21 && s[r] <= 0x7e && s[r] != ']')
        r++;
    if (r + 1 >= len || s[r] != ']' || s[r + 1] != ' ')
        return 0;
    Py_ssize_t d = r;
    while (d > p0 && is_digit(s[d - 1]))
        d--;
    if (d == r || d - 1 < p0 + 1 || s[d - 1] != ':')
        return 0;
    p = r + 2;
    if (lead && starts(s, len, p, "Engine ", 7) && p + 12 <= len && is_digit(s[p + 7]) && is_digit(s[p + 8]) &&
        is_digit(s[p + 9]) && s[p + 10] == ':' && s[p + 11] == ' ')
        p += 12;
    for (Py_ssize_t f = 0; f < nk; f++) {
        if (!starts(s, len, p, lits[f], litn[f]))
            return 0;
        p += litn[f];
        Py_ssize_t e = figure(s, len, p, kinds[f]);
        if (e < 0)
            return 0;
        out->fig0[f] = p;
        out->fig1[f] = e;
        p = e;
    }
    if (!starts(s, len, p, lits[nk], litn[nk]))
        return 0;
    return p + litn[nk] == len;
}

static PyObject *ascii_text(const char *s, Py_ssize_t n)
{
    PyObject *o = PyUnicode_New(n, 127);
    if (o != NULL)
        memcpy(PyUnicode_1BYTE_DATA(o), s, (size_t)n);
    return o;
}

static PyObject *stats_run(PyObject *self, PyObject *args)
{
    PyObject *texts, *lits_t, *pieces_t, *times = NULL, *rows = NULL, *name = NULL, *pid = NULL, *out = NULL;
    Py_ssize_t i, nk;
    const char *kinds;
    int lead, own_time;
    const char *lits[MAX_FIGS + 1], *pieces[MAX_FIGS + 1];
    Py_ssize_t litn[MAX_FIGS + 1], piecen[MAX_FIGS + 1];

    if (!PyArg_ParseTuple(args, "O!nO!s#O!pp", &PyList_Type, &texts, &i, &PyTuple_Type, &lits_t, &kinds, &nk,
                          &PyTuple_Type, &pieces_t, &lead, &own_time))
        return NULL;
    if (nk > MAX_FIGS || PyTuple_GET_SIZE(lits_t) != nk + 1 || PyTuple_GET_SIZE(pieces_t) != nk + 1) {
        PyErr_SetString(PyExc_ValueError, "stats_run: one literal and one piece per figure, and one more");
        return NULL;
    }
    for (Py_ssize_t k = 0; k <= nk; k++) {
        PyObject *l = PyTuple_GET_ITEM(lits_t, k), *q = PyTuple_GET_ITEM(pieces_t, k);
        if (!PyUnicode_Check(l) || !PyUnicode_IS_ASCII(l) || !PyUnicode_Check(q) || !PyUnicode_IS_ASCII(q)) {
            PyErr_SetString(PyExc_ValueError, "stats_run: literals and pieces are ASCII text");
            return NULL;
        }
        lits[k] = (const char *)PyUnicode_1BYTE_DATA(l);
        litn[k] = PyUnicode_GET_LENGTH(l);
        pieces[k] = (const char *)PyUnicode_1BYTE_DATA(q);
        piecen[k] = PyUnicode_GET_LENGTH(q);
        if (k < nk && kinds[k] != 'F' && kinds[k] != 'I') {
            PyErr_SetString(PyExc_ValueError, "stats_run: figure kinds are F or I");
            return NULL;
        }
    }
    times = PyList_New(0);
    rows = PyList_New(0);
    if (times == NULL || rows == NULL)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(texts), j = i;
    if (i < 0)
        n = i; /* (no line taken: j == i) */
    const char *tag = NULL;
    Py_ssize_t tagn = 0, pidn = 0;
    const char *pidp = NULL;
    stats_line ln;
    for (; j < n; j++) {
        PyObject *t = PyList_GET_ITEM(texts, j);
        if (!PyUnicode_Check(t) || !PyUnicode_IS_ASCII(t))
            break;
        const char *s = (const char *)PyUnicode_1BYTE_DATA(t);
        Py_ssize_t len = PyUnicode_GET_LENGTH(t);
        if (!stats_parse(s, len, lits, litn, kinds, nk, lead, &ln))
            break;
        if (own_time && (s[ln.time + 6] > '2' || (s[ln.time + 6] == '2' && s[ln.time + 7] >= '4')))
            break; /* hour 24 and later: the line's own time is read the regex's way */
        const char *np = ln.name0 >= 0 ? s + ln.name0 : NULL, *pp = ln.name0 >= 0 ? s + ln.pid0 : NULL;
        Py_ssize_t nn = ln.name0 >= 0 ? ln.name1 - ln.name0 : 0, pn = ln.name0 >= 0 ? ln.pid1 - ln.pid0 : 0;
        if (j == i) {
            if (np != NULL) {
                name = ascii_text(np, nn);
                pid = ascii_text(pp, pn);
                if (name == NULL || pid == NULL)
                    goto done;
            }
        } else if ((np == NULL) != (name == NULL) ||
                   (np != NULL && (nn != tagn || pn != pidn || memcmp(np, tag, (size_t)nn) || memcmp(pp, pidp, (size_t)pn))))
            break; /* another tag: the run ends */
        if (j == i)
            tag = np, tagn = nn, pidp = pp, pidn = pn; /* (texts holds that line meanwhile) */
        /* "MM-DDTHH:MM:SS" */
        char when[14];
        memcpy(when, s + ln.time, 14);
        when[5] = 'T';
        PyObject *w = ascii_text(when, 14);
        Py_ssize_t size = 0;
        for (Py_ssize_t k = 0; k <= nk; k++)
            size += piecen[k] + (k < nk ? ln.fig1[k] - ln.fig0[k] : 0);
        PyObject *row = PyUnicode_New(size, 127);
        if (w == NULL || row == NULL || PyList_Append(times, w) < 0 || PyList_Append(rows, row) < 0) {
            Py_XDECREF(w);
            Py_XDECREF(row);
            goto done;
        }
        Py_DECREF(w);
        char *o = (char *)PyUnicode_1BYTE_DATA(row);
        for (Py_ssize_t k = 0; k <= nk; k++) {
            memcpy(o, pieces[k], (size_t)piecen[k]);
            o += piecen[k];
            if (k < nk) {
                memcpy(o, s + ln.fig0[k], (size_t)(ln.fig1[k] - ln.fig0[k]));
                o += ln.fig1[k] - ln.fig0[k];
            }
        }
        Py_DECREF(row);
    }
    out = Py_BuildValue("(nOOOO)", j, name ? name : Py_None, pid ? pid : Py_None, times, rows);

done:
    Py_XDECREF(times);
    Py_XDECREF(rows);
    Py_XDECREF(name);
    Py_XDECREF(pid);
    return out;
}

static PyMethodDef methods[] = {
    {"cut", cut, METH_VARARGS,
     "cut(block, hits, lineno) -> (line numbers as int64 bytes, the lines joined by newlines, "
     "newlines in block): the lines of block holding the hit offsets, as scan._np_lines."},
    {"podman_lines", podman_lines, METH_VARARGS,
     "podman_lines(block) -> (line starts, line ends as int64 bytes, usual as one byte each): a "
     "podman -t block's lines and which are in the usual shape (podman's stamp, no \"Z \" after "
     "it), as scan._podman_table works them out with numpy."},
    {"clean", clean, METH_VARARGS,
     "clean(block) -> True when block holds no ESC and no NUL byte (nothing for scan._clean_block "
     "to remove)."},
    {"stats_run", stats_run, METH_VARARGS,
     "stats_run(texts, i, literals, kinds, pieces, lead, own_time) -> (j, name, pid, times, rows): "
     "the lines texts[i:j] read as everyday stats lines with one tag (see parse._stats_lines)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "bootlog._linecut",
    "The reader's and the parser's hot loops in native code (optional; see scan.py, parse.py).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__linecut(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddStringConstant(m, "STATS_PREFIX", STATS_PREFIX_TEXT) < 0 ||
                      PyModule_AddStringConstant(m, "PODMAN_STAMP", STAMP) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
