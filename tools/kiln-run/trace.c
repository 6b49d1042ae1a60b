/* kiln-run --trace FILE.json: the last run as a Chrome trace (the JSON object format of the
 * Trace Event Format, which Perfetto and chrome://tracing load): one complete ("X") event per
 * launch per thread that ran its tasks, named by the model nodes the launch computes, with the
 * launch, its group, kernel and task count as arguments; thread-name metadata events label the
 * caller and the workers. */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>

/* |s| as the body of a JSON string. */
static void json_text(FILE* f, const char* s) {
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
}

int write_trace(const char* path, const kiln_model* model, const kiln_session* session,
                size_t threads, char* err, size_t err_size) {
  size_t n = 0;
  if (kiln_session_trace(session, NULL, 0, &n) != KILN_OK) {
    snprintf(err, err_size, "%s", kiln_last_error_message());
    return 1;
  }
  kiln_trace_event* ev = malloc((n ? n : 1) * sizeof *ev);
  if (!ev) {
    snprintf(err, err_size, "out of memory for %zu trace events", n);
    return 1;
  }
  kiln_session_trace(session, ev, n, &n);
  /* Written beside, then renamed: a failed write leaves no half-written trace. */
  char part[4096];
  if (snprintf(part, sizeof part, "%s.part", path) >= (int)sizeof part) {
    snprintf(err, err_size, "the trace path is too long");
    free(ev);
    return 1;
  }
  FILE* f = fopen(part, "w");
  if (!f) {
    snprintf(err, err_size, "cannot write '%s'", path);
    free(ev);
    return 1;
  }
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  for (size_t t = 0; t < threads; ++t)
    fprintf(f,
            "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %zu, "
            "\"args\": {\"name\": \"%s %zu\"}},\n",
            t, t ? "worker" : "caller", t);
  for (size_t i = 0; i < n; ++i) {
    kiln_launch_info li;
    li.struct_size = sizeof li;
    const char* kernel = "?";
    if (kiln_model_launch_info(model, ev[i].launch, &li) != KILN_OK) li.label = "?";
    kiln_model_kernel_name(model, li.kernel, &kernel);
    fprintf(f, "{\"name\": \"");
    json_text(f, li.label);
    fprintf(f,
            "\", \"cat\": \"launch\", \"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, "
            "\"dur\": %.3f, \"args\": {\"launch\": %u, \"group\": %zu, \"kernel\": \"",
            ev[i].thread, ev[i].start_ms * 1e3, (ev[i].end_ms - ev[i].start_ms) * 1e3, ev[i].launch,
            li.group);
    json_text(f, kernel);
    fprintf(f, "\", \"tasks\": %zu}}%s\n", li.num_tasks, i + 1 < n ? "," : "");
  }
  fprintf(f, "]}\n");
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(part, path) != 0) {
    remove(part);
    snprintf(err, err_size, "cannot write '%s'", path);
    free(ev);
    return 1;
  }
  free(ev);
  return 0;
}
