/* kiln-run --trace: the last run of a traced session as a Chrome trace JSON file. */
#pragma once

#include <stddef.h>

#include "kiln/kiln.h"

/* Writes |path|; 0 on success, else 1 with a message in |err|. */
int write_trace(const char* path, const kiln_model* model, const kiln_session* session,
                size_t threads, char* err, size_t err_size);
