/* bootlog._linecut: the reader's line cut of a block in native code (optional).
 *
 * scan._np_lines does the same with numpy, and scan's per-line path without it; this module is
 * only a faster way to the same bytes (tests/test_scan.py holds the three to equal output).  Its
 * whole reason is speed: the numpy version passes over each block twice and needs numpy, whose
 * import alone is ~60 ms of the reader's time.
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
 * the usual shape (one byte, 0 or 1).
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
        lines[taken] = (int64_t)(lineno + seen);
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

static PyMethodDef methods[] = {
    {"cut", cut, METH_VARARGS,
     "cut(block, hits, lineno) -> (line numbers as int64 bytes, the lines joined by newlines, "
     "newlines in block): the lines of block holding the hit offsets, as scan._np_lines."},
    {"podman_lines", podman_lines, METH_VARARGS,
     "podman_lines(block) -> (line starts, line ends as int64 bytes, usual as one byte each): a "
     "podman -t block's lines and which are in the usual shape (podman's stamp, no \"Z \" after "
     "it), as scan._podman_np works them out with numpy."},
    {"clean", clean, METH_VARARGS,
     "clean(block) -> True when block holds no ESC and no NUL byte (nothing for scan._clean_block "
     "to remove)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "bootlog._linecut",
    "The reader's line cut of a block in native code (optional; see scan._np_lines).", -1, methods,
};

PyMODINIT_FUNC PyInit__linecut(void)
{
    return PyModule_Create(&module);
}
