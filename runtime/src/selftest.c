/* The on-device self-test: run the package's embedded inputs and compare the outputs with the
 * expectations the compiling machine stored (kilnc --embed-selftest). */
#include <math.h>
#include <string.h>

#include "internal.h"

/* Element |i| of a tensor as a double (floating-point types), or its bits (integers). */
static double as_double(const uint8_t* p, uint8_t dtype, uint64_t i) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32: {
      float v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case KILN_DTYPE_FLOAT64: {
      double v;
      memcpy(&v, p + 8 * i, 8);
      return v;
    }
    case KILN_DTYPE_BFLOAT16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      uint32_t bits = (uint32_t)h << 16;
      float v;
      memcpy(&v, &bits, 4);
      return v;
    }
    case KILN_DTYPE_FLOAT16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      /* Without libm: subnormals are f * 2^-24; normals rebuilt as float32 bits. */
      uint32_t e = (h >> 10) & 31, f = h & 1023, bits;
      double v;
      if (e == 0) {
        v = (double)f / 16777216.0;
      } else if (e == 31) {
        v = f ? NAN : INFINITY;
      } else {
        float x;
        bits = ((e + 112) << 23) | (f << 13);
        memcpy(&x, &bits, 4);
        v = x;
      }
      return (h & 0x8000) ? -v : v;
    }
    default:
      return 0;
  }
}

static double absd(double x) {
  return x < 0 ? -x : x;
} /* (no libm in the runtime) */

static int is_float(uint8_t dtype) {
  return dtype == KILN_DTYPE_FLOAT32 || dtype == KILN_DTYPE_FLOAT64 ||
         dtype == KILN_DTYPE_FLOAT16 || dtype == KILN_DTYPE_BFLOAT16;
}

/* The error of one output (see kiln_selftest_report). */
static double output_error(const kiln_tensor_desc* t, const uint8_t* got, const uint8_t* want) {
  size_t es = kiln_dtype_size((kiln_dtype)t->dtype);
  uint64_t n = es ? t->size_bytes / es : 0;
  if (!n) return 0;
  if (!is_float(t->dtype)) {
    uint64_t differ = 0;
    for (uint64_t i = 0; i < n; ++i) differ += memcmp(got + i * es, want + i * es, es) != 0;
    return (double)differ / (double)n;
  }
  double scale = 0, diff = 0;
  for (uint64_t i = 0; i < n; ++i) {
    double w = as_double(want, t->dtype, i), g = as_double(got, t->dtype, i);
    if (isnan(w) || isnan(g)) {
      if (isnan(w) != isnan(g)) return INFINITY;
      continue;
    }
    if (isinf(w) || isinf(g)) {
      if (w != g) return INFINITY;
      continue;
    }
    if (absd(w) > scale) scale = absd(w);
    if (absd(g - w) > diff) diff = absd(g - w);
  }
  return scale > 0 ? diff / scale : diff;
}

kiln_status kiln_model_has_selftest(const kiln_model* model, int* out_has) {
  if (!model || !out_has)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_HAS_SELFTEST_NULL_ARGUMENT));
  *out_has = model->has_selftest;
  return KILN_OK;
}

kiln_status kiln_model_selftest(kiln_model* model, size_t num_threads,
                                kiln_selftest_report* report) {
  if (!model || !report)
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_SELFTEST_NULL_ARGUMENT));
  if (report->struct_size < sizeof(kiln_selftest_report))
    return kiln_error(KILN_INVALID_ARGUMENT, KM(KILN_MODEL_SELFTEST_REPORT_STRUCT_SIZE),
                      report->struct_size, sizeof(kiln_selftest_report));
  if (!model->has_selftest)
    return kiln_error(KILN_NOT_FOUND, KM(KILN_MODEL_SELFTEST_THE_PACKAGE_HAS));
  kiln_session_options o;
  kiln_session_options_init(&o);
  o.num_threads = num_threads;
  kiln_session* s = NULL;
  KILN_RETURN_IF_ERROR(kiln_session_create(model, &o, &s));
  kiln_status st = KILN_OK;
  for (uint32_t i = 0; i < model->num_inputs && st == KILN_OK; ++i)
    st = kiln_session_set_input(s, i, (kiln_dtype)model->inputs[i].dtype, model->selftest_inputs[i],
                                (size_t)model->inputs[i].size_bytes);
  if (st == KILN_OK) st = kiln_session_run(s);
  if (st == KILN_OK) {
    report->passed = 1;
    report->tolerance = model->selftest_tolerance;
    report->num_outputs = model->num_outputs;
    report->max_error = 0;
    for (uint32_t i = 0; i < model->num_outputs; ++i) {
      const void* got;
      size_t size;
      kiln_session_output(s, i, &got, &size);
      double e = output_error(&model->outputs[i], got, model->selftest_outputs[i]);
      double limit = is_float(model->outputs[i].dtype) ? model->selftest_tolerance : 0.0;
      if (!(e <= limit)) report->passed = 0;
      if (i < KILN_SELFTEST_MAX_OUTPUTS) report->output_error[i] = e;
      if (!(e <= report->max_error)) report->max_error = e;
    }
  }
  kiln_session_release(s);
  return st;
}
