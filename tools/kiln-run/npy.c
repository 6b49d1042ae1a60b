#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* kDescr[] = {"|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2",
                               "<u4", "<u8", "<f2", NULL,  "<f4", "<f8"};

static int fail(char* err, size_t n, const char* msg, const char* path) {
  snprintf(err, n, "%s: %s", path, msg);
  return 1;
}

int npy_read(const char* path, npy_array* out, char* err, size_t err_size) {
  memset(out, 0, sizeof *out);
  FILE* f = fopen(path, "rb");
  if (!f) return fail(err, err_size, "cannot open", path);
  unsigned char head[12];
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return fail(err, err_size, "not a .npy file", path);
  }
  size_t hlen;
  if (head[6] == 1) {
    hlen = head[8] | ((size_t)head[9] << 8);
  } else {
    if (fread(head + 10, 1, 2, f) != 2) {
      fclose(f);
      return fail(err, err_size, "truncated header", path);
    }
    hlen = head[8] | ((size_t)head[9] << 8) | ((size_t)head[10] << 16) | ((size_t)head[11] << 24);
  }
  char* h = malloc(hlen + 1);
  if (!h || fread(h, 1, hlen, f) != hlen) {
    free(h);
    fclose(f);
    return fail(err, err_size, "truncated header", path);
  }
  h[hlen] = 0;
  /* 'descr': '<f4' (byte order '<', '|' or '=' accepted; big-endian is not). */
  int found = -1;
  char* d = strstr(h, "'descr'");
  char* q = d ? strchr(d + 7, '\'') : NULL;
  if (q && (q[1] == '<' || q[1] == '|' || q[1] == '=') && q[2] && q[3] && q[4] == '\'') {
    for (int i = 0; i < 13; ++i)
      if (kDescr[i] && kDescr[i][1] == q[2] && kDescr[i][2] == q[3]) found = i;
  }
  if (found < 0 || strstr(h, "'fortran_order': True") || !strstr(h, "'shape'")) {
    free(h);
    fclose(f);
    return fail(err, err_size, "unsupported dtype (big-endian?) or Fortran order", path);
  }
  out->dtype = (kiln_dtype)found;
  char* s = strchr(strstr(h, "'shape'"), '(');
  size_t numel = 1;
  while (s && *s && *s != ')') {
    ++s;
    while (*s == ' ') ++s;
    if (*s == ')') break;
    char* end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || out->rank >= 16) break;
    out->shape[out->rank++] = v;
    numel *= (size_t)v;
    s = end;
    while (*s == ' ') ++s;
  }
  free(h);
  out->size_bytes = numel * kiln_dtype_size(out->dtype);
  out->data = malloc(out->size_bytes ? out->size_bytes : 1);
  if (!out->data || fread(out->data, 1, out->size_bytes, f) != out->size_bytes) {
    fclose(f);
    npy_free(out);
    return fail(err, err_size, "truncated data", path);
  }
  fclose(f);
  return 0;
}

int npy_write(const char* path, kiln_dtype dtype, size_t rank, const int64_t* shape,
              const void* data, size_t size_bytes, char* err, size_t err_size) {
  if ((unsigned)dtype > 12 || !kDescr[dtype])
    return fail(err, err_size, "dtype has no .npy form", path);
  char shp[512] = "(";
  for (size_t i = 0; i < rank; ++i) {
    char b[32];
    snprintf(b, sizeof b, "%lld%s", (long long)shape[i],
             rank == 1 ? "," : (i + 1 < rank ? ", " : ""));
    strncat(shp, b, sizeof shp - strlen(shp) - 1);
  }
  strncat(shp, ")", sizeof shp - strlen(shp) - 1);
  char header[1024];
  int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                   kDescr[dtype], shp);
  size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  if (!f) return fail(err, err_size, "cannot write", path);
  size_t hlen = (size_t)n + pad + 1;
  unsigned char pre[10] = {0x93,
                           'N',
                           'U',
                           'M',
                           'P',
                           'Y',
                           1,
                           0,
                           (unsigned char)(hlen & 0xFF),
                           (unsigned char)(hlen >> 8)};
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)n, f) == (size_t)n;
  for (size_t i = 0; ok && i < pad; ++i) ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF && fwrite(data, 1, size_bytes, f) == size_bytes;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    remove(tmp);
    return fail(err, err_size, "cannot write", path);
  }
  return 0;
}

void npy_free(npy_array* a) {
  free(a->data);
  a->data = NULL;
}
