/* Every message the runtime reports (kiln_error, kiln_invalid), in one table. In the
 * amalgamation a call site passes its message's offset in the table (KM(ID), an immediate)
 * instead of a pointer to a string literal: on AArch64 a literal's address is two instructions
 * and two 24-byte relocations in the archive, so 190 messages cost it about 10 KB
 * (docs/edge.md). The table itself is packed (messages_packed.h: its most repeated words one
 * byte each, 9.1 KB of text in 5.4 KB), and expanded when a message is reported. Compiled file
 * by file (the sanitizer builds in tests/), KM(ID) is the literal itself and kiln_error and
 * kiln_invalid check their arguments against it (printf formats).
 * A new message: its text as KILN_MSG_ID below and its ID in KILN_MESSAGE_IDS, then
 * tools/scripts/pack_messages.py to write messages_packed.h again. Not installed. */
#ifndef KILN_RT_MESSAGES_H_
#define KILN_RT_MESSAGES_H_

#define KILN_MSG_KERNEL_CODE_ELF "kernel code (ELF): %s"
#define KILN_MSG_KERNEL_CODE_IS_FOR_ELF_MACHINE \
  "kernel code is for ELF machine %u, this runtime runs %s"
#define KILN_MSG_CANNOT_MAP_BYTES_FOR_KERNEL_CODE "cannot map %llu bytes for kernel code"
#define KILN_MSG_KERNEL_CODE_ELF_RELOCATION_OF_TYPE \
  "kernel code (ELF): relocation of type %lu (only RELATIVE is supported)"
#define KILN_MSG_KERNEL_ENTRY_TABLE_VERSION_MAGIC_0X \
  "kernel entry table version %u (magic 0x%08x); this runtime reads version %u"
#define KILN_MSG_CANNOT_PROTECT_KERNEL_CODE_MEMORY "cannot protect kernel code memory"
#define KILN_MSG_CANNOT_PROTECT_RELOCATED_KERNEL_DATA "cannot protect relocated kernel data"
#define KILN_MSG_LAUNCH_READS_SLOT_IT_WRITES \
  "launch %u in group %u reads slot %u while it writes it"
#define KILN_MSG_LAUNCH_READS_SLOT_GROUP_WRITES \
  "launch %u in group %u reads slot %u, which the group writes (a race)"
#define KILN_MSG_THIS_CPU_LACKS_VARIANT_FEATURES \
  "this CPU lacks features of the package's variants: %s"
#define KILN_MSG_THIS_CPU_LACKS_FEATURES "this CPU lacks features the package needs: %s"
#define KILN_MSG_AT_BYTE_OFFSET "%s at byte offset %llu"
#define KILN_MSG_SHORTER_THAN_A_FLATBUFFERS_HEADER "shorter than a FlatBuffers header"
#define KILN_MSG_NOT_A_KILN_PACKAGE_THE_FILE "not a kiln package (the file identifier is not KILN)"
#define KILN_MSG_ROOT_TABLE_OUT_OF_BOUNDS "root table out of bounds"
#define KILN_MSG_NO_PROVENANCE "no provenance"
#define KILN_MSG_PACKAGE_FORMAT_THIS_RUNTIME_READS_FORMAT \
  "package format %u.%u; this runtime reads format %u.x"
#define KILN_MSG_A_STATIC_LIBRARY_PACKAGE_WITH_KERNEL "a static-library package with kernel code"
#define KILN_MSG_ITS_KERNELS_ARE_IN_A_STATIC                                                      \
  "its kernels are in a static library (--emit static-lib): load it with kiln_model_load_static " \
  "and the library's NAME_kernels"
#define KILN_MSG_NO_KERNEL_CODE "no kernel code"
#define KILN_MSG_IT_CARRIES_ITS_OWN_KERNEL_CODE                                                  \
  "it carries its own kernel code; load it with kiln_model_load_memory (kiln_model_load_static " \
  "is for --emit static-lib)"
#define KILN_MSG_THE_CONSTANTS_ARE_NOT_64_BYTE "the constants are not 64-byte aligned"
#define KILN_MSG_THE_PACKAGE_S_SHA_256_IS \
  "the package's SHA-256 is not the one the application pinned"
#define KILN_MSG_THE_PACKAGE_IS_NOT_SIGNED_AND \
  "the package is not signed, and the application requires a signature (kilnc compile --sign KEY)"
#define KILN_MSG_THE_PACKAGE_S_SIGNATURE_IS_MALFORMED "the package's signature is malformed"
#define KILN_MSG_THE_PACKAGE_IS_SIGNED_BY_KEY \
  "the package is signed by key %s..., which the application does not trust"
#define KILN_MSG_NO_METADATA_CHECKSUM "no metadata checksum"
#define KILN_MSG_THE_PACKAGE_S_SIGNATURE_BY_KEY \
  "the package's signature by key %s... does not verify: it was changed after signing"
#define KILN_MSG_OVERLAPPING_SECTIONS "overlapping sections"
#define KILN_MSG_CHECKSUM_MISMATCH_IN_THE_PACKAGE_METADATA \
  "checksum mismatch in the package metadata (the file is corrupt)"
#define KILN_MSG_A_SECTION_WITHOUT_A_NAME "a section without a name"
#define KILN_MSG_CHECKSUM_MISMATCH_IN_SECTION_THE_FILE \
  "checksum mismatch in section '%s' (the file is corrupt)"
#define KILN_MSG_THE_CODE_AND_CONSTANTS_SECTIONS_MUST \
  "the code and constants sections must both have checksums"
#define KILN_MSG_NO_TARGET "no target"
#define KILN_MSG_NO_TARGET_TRIPLE "no target triple"
#define KILN_MSG_THE_PACKAGE_IS_COMPILED_FOR_THIS \
  "the package is compiled for %s; this runtime runs %s"
#define KILN_MSG_REQUIRED_CPU_FEATURES_THE_LIMIT_IS "%u required CPU features (the limit is %u)"
#define KILN_MSG_A_MALFORMED_CPU_FEATURE "a malformed CPU feature"
#define KILN_MSG_THE_PACKAGE_REQUIRES_CPU_FEATURE_WHICH \
  "the package requires CPU feature '%s', which this runtime cannot check"
#define KILN_MSG_VARIANTS_THE_LIMIT_IS_A_STATIC \
  "%u variants (the limit is %u; a static library has one)"
#define KILN_MSG_A_TARGET_WITHOUT_A_CPU_NAME "a target without a CPU name"
#define KILN_MSG_THE_PACKAGE_HAS_NO_VARIANT_KILN \
  "the package has no variant '%s' (kiln-run --info lists its variants)"
#define KILN_MSG_A_VARIANT_WITHOUT_KERNEL_CODE "a variant without kernel code"
#define KILN_MSG_THE_LIMIT_IS "%u %s (the limit is %u)"
#define KILN_MSG_OUT_OF_MEMORY_LOADING_TENSOR_DESCRIPTIONS \
  "out of memory loading tensor descriptions"
#define KILN_MSG_A_TENSOR_WITHOUT_A_NAME "a tensor without a name"
#define KILN_MSG_TENSOR_HAS_RANK_THE_LIMIT_IS "tensor '%s' has rank %u (the limit is %u)"
#define KILN_MSG_TENSOR_HAS_DTYPE "tensor '%s' has dtype %u"
#define KILN_MSG_TENSOR_HAS_A_BAD_SHAPE "tensor '%s' has a bad shape"
#define KILN_MSG_TENSOR_IS_TOO_LARGE "tensor '%s' is too large"
#define KILN_MSG_OUT_OF_MEMORY_COPYING_TENSOR_DESCRIPTIONS \
  "out of memory copying tensor descriptions"
#define KILN_MSG_THE_SELF_TEST_HAS_FOR "the self-test has %u %s for %u"
#define KILN_MSG_OUT_OF_MEMORY_LOADING_THE_SELF "out of memory loading the self-test"
#define KILN_MSG_SELF_TEST_HAS_BYTES_HAS "self-test %s %u has %u bytes, '%s' has %llu"
#define KILN_MSG_THE_SELF_TEST_TOLERANCE_IS_NOT "the self-test tolerance is not in [0, 1]"
#define KILN_MSG_SLOT_LIES_OUTSIDE_THE_ARENA_OR "slot %u lies outside the arena or is misaligned"
#define KILN_MSG_SLOT_HAS_AN_EMPTY_LIFETIME "slot %u has an empty lifetime"
#define KILN_MSG_SLOT_LIES_OUTSIDE_THE_CONSTANTS_OR \
  "slot %u lies outside the constants or is misaligned"
#define KILN_MSG_SLOT_DOES_NOT_MATCH "slot %u does not match %s %u"
#define KILN_MSG_SLOT_HAS_KIND "slot %u has kind %u"
#define KILN_MSG_THE_ARENA_ALIGNMENT_IS_NOT_A "the arena alignment is not a power of two up to 4096"
#define KILN_MSG_THE_ARENA_IS_TOO_LARGE "the arena is too large"
#define KILN_MSG_SLOTS_THE_LIMIT_IS "%u slots (the limit is %u)"
#define KILN_MSG_OUT_OF_MEMORY_LOADING_SLOTS "out of memory loading slots"
#define KILN_MSG_SLOT_HAS_DTYPE "slot %u has dtype %u"
#define KILN_MSG_SLOT_SIZE_DOES_NOT_MATCH_ELEMENTS "slot %u size %llu does not match %llu elements"
#define KILN_MSG_DOES_NOT_OWN_AN_SLOT "%s '%s' does not own an %s slot"
#define KILN_MSG_SYMBOLS_THE_LIMIT_IS "%u symbols (the limit is %u)"
#define KILN_MSG_OUT_OF_MEMORY_LOADING_SYMBOLS "out of memory loading symbols"
#define KILN_MSG_SYMBOL_HAS_NO_NAME_OR_THE "symbol %u has no name or the bounds [%lld, %lld]"
#define KILN_MSG_OUTPUT_HAS_EXTENT_PROGRAMS "output '%s' has %u extent programs"
#define KILN_MSG_OUTPUT_AXIS_A_MALFORMED_EXTENT_PROGRAM                                        \
  "output '%s' axis %u: an extent program malformed, past the layout at the bounds, or after " \
  "a symbolic axis"
#define KILN_MSG_INPUT_HAS_AXIS_SYMBOLS "input '%s' has %u axis symbols"
#define KILN_MSG_INPUT_AXIS_SYMBOL_NOT_LAID_OUT \
  "input '%s' axis %u: symbol %d, or not laid out at its maximum"
#define KILN_MSG_NO_INPUT_SETS_THE_SYMBOL "no input sets the symbol '%s'"
#define KILN_MSG_INPUT_VALUE_SYMBOLS "input '%s': %u value symbols, or a bounded one"
#define KILN_MSG_CHECK_MALFORMED "check %u: a malformed program or no message"
#define KILN_MSG_KILN_SESSION_RUN_CHECK "kiln_session_run: %s"
#define KILN_MSG_KILN_SESSION_RUN_LOOP_PAST \
  "kiln_session_run: %s: trip count %lld: it would run past the %lld iterations it is planned for"
#define KILN_MSG_KILN_SESSION_RUN_LOOP_COUNT \
  "kiln_session_run: %s: it ran %lld iterations; '%s' must be in [%lld, %lld]"
#define KILN_MSG_LOOP_MALFORMED \
  "loop %u: its groups, trip count or condition slot, symbols or bound are malformed"
#define KILN_MSG_SLOT_LIVES_IN_PART_OF_LOOP "arena slot %u lives in part of loop %u's groups"
#define KILN_MSG_COUNT_MALFORMED \
  "count %u: its symbol, slot or group is malformed (an int64 slot live in its group, no loop's)"
#define KILN_MSG_KILN_SESSION_RUN_COUNT \
  "kiln_session_run: the size '%s' is %lld, outside the [%lld, %lld] the package is planned for"
#define KILN_MSG_OUT_OF_MEMORY_CREATING_A_SESSION "out of memory creating a session"
#define KILN_MSG_KILN_SESSION_RUN_INPUT_AXIS_IS \
  "kiln_session_run: input '%s' axis %u is %lld, but '%s' is %lld in input '%s'"
#define KILN_MSG_KILN_SESSION_RUN_OUTPUT_LEAVES_ITS \
  "kiln_session_run: output '%s' leaves its layout"
#define KILN_MSG_KILN_SESSION_SET_INPUT_SHAPED_NULL \
  "kiln_session_set_input_shaped: NULL argument or index out of range"
#define KILN_MSG_KILN_SESSION_SET_INPUT_SHAPED_HAS \
  "kiln_session_set_input_shaped: '%s' has rank %u, given %zu"
#define KILN_MSG_KILN_SESSION_SET_INPUT_SHAPED_STATIC_AXIS \
  "kiln_session_set_input_shaped: '%s' axis %u is %lld, the model fixes it to %lld"
#define KILN_MSG_KILN_SESSION_SET_INPUT_SHAPED_AXIS \
  "kiln_session_set_input_shaped: '%s' axis %u is %lld: '%s' must be in [%lld, %lld]"
#define KILN_MSG_KILN_SESSION_SET_INPUT_SHAPED_OF \
  "kiln_session_set_input_shaped: '%s' of that shape is %s of %llu bytes, given %s of %zu"
#define KILN_MSG_KILN_SESSION_OUTPUT_SHAPE_NULL_ARGUMENT "kiln_session_output_shape: NULL argument"
#define KILN_MSG_KILN_MODEL_SYMBOL_INFO_NULL_ARGUMENT \
  "kiln_model_symbol_info: NULL argument or index out of range"
#define KILN_MSG_KILN_MODEL_SYMBOL_COUNT_NULL_ARGUMENT "kiln_model_symbol_count: NULL argument"
#define KILN_MSG_OUT_OF_MEMORY_LOADING_KERNELS "out of memory loading kernels"
#define KILN_MSG_KERNEL_IS_ENTRY_OF "kernel %s is entry %u of %u"
#define KILN_MSG_KERNEL_S_ARGUMENTS_OR_ACCESS_EXTENTS \
  "kernel %s's arguments (%u) or access extents differ from its code's (%llu arguments)"
#define KILN_MSG_KERNELS_THE_LIMIT_IS "%u kernels (the limit is %u)"
#define KILN_MSG_KERNEL_HAS_A_BAD_NAME_OR                                                          \
  "kernel %u has a bad name or argument list (its argument count, dtypes and access extents must " \
  "agree)"
#define KILN_MSG_THE_PACKAGE_CHANGED_WHILE_LOADING "the package changed while loading"
#define KILN_MSG_LAUNCH_ARGUMENT_NAMES_SLOT_OF "launch %u argument %u names slot %u of %u"
#define KILN_MSG_LAUNCH_ARGUMENT_HAS_DTYPE_KERNEL_WANTS \
  "launch %u argument %u has dtype %u, kernel %s wants %u"
#define KILN_MSG_LAUNCH_ARGUMENT_KERNEL_TOUCHES_BYTES_OF \
  "launch %u argument %u: kernel %s touches bytes [%llu, %llu) of slot %u, which has %llu"
#define KILN_MSG_KERNEL_ARGUMENT_ACCESS "kernel %s argument %u access %u"
#define KILN_MSG_LAUNCH_WRITES_AN_INPUT_OR_A "launch %u writes an input or a constant (slot %u)"
#define KILN_MSG_SLOT_IS_WRITTEN_TWICE "slot %u is written twice in group %u"
#define KILN_MSG_SLOT_IS_WRITTEN_AND_READ_IN "slot %u is written and read in group %u (a race)"
#define KILN_MSG_SLOT_IS_WRITTEN_IN_GROUP_OUTSIDE \
  "slot %u is written in group %u, outside its lifetime [%u, %u]"
#define KILN_MSG_LAUNCH_IN_GROUP_READS_SLOT_BEFORE \
  "launch %u in group %u reads slot %u before it is written"
#define KILN_MSG_SLOT_IS_READ_IN_GROUP_OUTSIDE \
  "slot %u is read in group %u, outside its lifetime [%u, %u]"
#define KILN_MSG_LAUNCH_NAMES_KERNEL_OF "launch %u names kernel %u of %u"
#define KILN_MSG_LAUNCH_PASSES_ARGUMENTS_KERNEL_TAKES \
  "launch %u passes %u arguments, kernel %s takes %u"
#define KILN_MSG_LAUNCH_HAS_TASKS "launch %u has %u tasks"
#define KILN_MSG_TOO_MANY_TASKS_IN_A_GROUP "too many tasks in a group"
#define KILN_MSG_SLOT_IS_NEVER_WRITTEN "%s slot %u is never written"
#define KILN_MSG_GROUPS_THE_LIMIT_IS "%u groups (the limit is %u)"
#define KILN_MSG_TOO_MANY_LAUNCHES "too many launches"
#define KILN_MSG_TOO_MANY_LAUNCH_ARGUMENTS "too many launch arguments"
#define KILN_MSG_OUT_OF_MEMORY_LOADING_THE_SCHEDULE "out of memory loading the schedule"
#define KILN_MSG_SLOT_LIVES_PAST_THE_LAST_GROUP "slot %u lives past the last group"
#define KILN_MSG_OUT_OF_MEMORY_VERIFYING_THE_MEMORY "out of memory verifying the memory plan"
#define KILN_MSG_ARENA_SLOT_OVERLAPS_ANOTHER_WHILE_BOTH \
  "arena slot %u overlaps another while both are live"
#define KILN_MSG_SLOT_IS_IN_PLACE_OF_NO_ARENA_SLOT "slot %u in place of %u: not another arena slot"
#define KILN_MSG_SLOT_IS_IN_PLACE_OF_BUT_DOES_NOT_FOLLOW \
  "slot %u in place of %u: offset %llu/%llu, size %llu/%llu, groups %u..%u after %u..%u"
#define KILN_MSG_KILN_MODEL_LOAD_STATIC_KERNELS_IS                                            \
  "kiln_model_load_static: |kernels| is not a kiln entry table of this version (rebuild the " \
  "library with this kilnc)"
#define KILN_MSG_THE_LINKED_KERNELS_ID_BELONG_TO \
  "the linked kernels (id %08x) belong to another package (id %08x)"
#define KILN_MSG_A_STATIC_TABLE_OF_TOO_MANY "a static table of too many kernels"
#define KILN_MSG_KILN_MODEL_OPTIONS_STRUCT_SIZE_IS \
  "kiln_model_options.struct_size is %zu; call kiln_model_options_init"
#define KILN_MSG_THE_ALLOCATOR_NEEDS_BOTH_ALLOC_AND "the allocator needs both alloc and free"
#define KILN_MSG_KILN_MODEL_OPTIONS_TRUSTED_KEYS_AT "kiln_model_options: %zu trusted keys at NULL"
#define KILN_MSG_KILN_MODEL_OPTIONS_REQUIRE_SIGNATURE_NEEDS \
  "kiln_model_options: require_signature needs trusted keys"
#define KILN_MSG_KILN_MODEL_LOAD_FILE_OUT_MODEL "kiln_model_load_file: out_model is NULL"
#define KILN_MSG_KILN_MODEL_LOAD_FILE_PATH_IS "kiln_model_load_file: path is NULL"
#define KILN_MSG_CANNOT_OPEN "cannot open '%s': %s"
#define KILN_MSG_IS_NOT_A_REGULAR_FILE "'%s' is not a regular file"
#define KILN_MSG_HAS_BYTES "'%s' has %lld bytes"
#define KILN_MSG_CANNOT_MAP "cannot map '%s': %s"
#define KILN_MSG_OUT_OF_MEMORY_LOADING "out of memory loading '%s'"
#define KILN_MSG_OUT_MODEL_IS_NULL "%s: out_model is NULL"
#define KILN_MSG_DATA_IS_NULL "%s: data is NULL"
#define KILN_MSG_OUT_OF_MEMORY_LOADING_A_PACKAGE "out of memory loading a package"
#define KILN_MSG_OUT_OF_MEMORY_COPYING_A_BYTE "out of memory copying a %zu-byte package"
#define KILN_MSG_KILN_MODEL_LOAD_STATIC_KERNELS_IS_2 "kiln_model_load_static: kernels is NULL"
#define KILN_MSG_KILN_MODEL_RELEASE_SESSION_S_STILL \
  "kiln_model_release: %d session(s) still use this model; release them first"
#define KILN_MSG_KILN_MODEL_INPUT_COUNT_NULL_ARGUMENT "kiln_model_input_count: NULL argument"
#define KILN_MSG_KILN_MODEL_OUTPUT_COUNT_NULL_ARGUMENT "kiln_model_output_count: NULL argument"
#define KILN_MSG_OUT_INFO_IS_NULL "%s: out_info is NULL"
#define KILN_MSG_OUT_INFO_STRUCT_SIZE_IS_EXPECTED \
  "%s: out_info->struct_size is %zu, expected at least %zu"
#define KILN_MSG_INDEX_OUT_OF_RANGE_THE_MODEL "%s: index %zu out of range (the model has %u)"
#define KILN_MSG_KILN_MODEL_INPUT_INFO_MODEL_IS "kiln_model_input_info: model is NULL"
#define KILN_MSG_KILN_MODEL_OUTPUT_INFO_MODEL_IS "kiln_model_output_info: model is NULL"
#define KILN_MSG_NULL_ARGUMENT "%s: NULL argument"
#define KILN_MSG_NO_TENSOR_NAMED "%s: no tensor named '%s'"
#define KILN_MSG_KILN_MODEL_FIND_INPUT_MODEL_IS "kiln_model_find_input: model is NULL"
#define KILN_MSG_KILN_MODEL_FIND_OUTPUT_MODEL_IS "kiln_model_find_output: model is NULL"
#define KILN_MSG_KILN_MODEL_ARENA_REQUIREMENTS_NULL_ARGUMENT \
  "kiln_model_arena_requirements: NULL argument"
#define KILN_MSG_KILN_MODEL_KERNEL_COUNT_NULL_ARGUMENT "kiln_model_kernel_count: NULL argument"
#define KILN_MSG_KILN_MODEL_KERNEL_NAME_NULL_ARGUMENT "kiln_model_kernel_name: NULL argument"
#define KILN_MSG_KILN_MODEL_KERNEL_NAME_INDEX_OUT "kiln_model_kernel_name: index %zu out of range"
#define KILN_MSG_KILN_MODEL_LAUNCH_COUNT_NULL_ARGUMENT "kiln_model_launch_count: NULL argument"
#define KILN_MSG_KILN_MODEL_LAUNCH_INFO_NULL_ARGUMENT "kiln_model_launch_info: NULL argument"
#define KILN_MSG_KILN_MODEL_LAUNCH_INFO_STRUCT_SIZE "kiln_model_launch_info: struct_size is %zu"
#define KILN_MSG_KILN_MODEL_LAUNCH_INFO_INDEX_OUT "kiln_model_launch_info: index %zu out of range"
#define KILN_MSG_KILN_MODEL_VARIANT_COUNT_NULL_ARGUMENT "kiln_model_variant_count: NULL argument"
#define KILN_MSG_KILN_MODEL_VARIANT_INFO_NULL_ARGUMENT "kiln_model_variant_info: NULL argument"
#define KILN_MSG_KILN_MODEL_VARIANT_INFO_STRUCT_SIZE "kiln_model_variant_info: struct_size is %zu"
#define KILN_MSG_KILN_MODEL_VARIANT_INFO_INDEX_OUT "kiln_model_variant_info: index %zu out of range"
#define KILN_MSG_KILN_SESSION_CREATE_OUT_SESSION_IS "kiln_session_create: out_session is NULL"
#define KILN_MSG_KILN_SESSION_CREATE_MODEL_IS_NULL "kiln_session_create: model is NULL"
#define KILN_MSG_KILN_SESSION_OPTIONS_STRUCT_SIZE_IS \
  "kiln_session_options.struct_size is %zu; call kiln_session_options_init"
#define KILN_MSG_KILN_SESSION_CREATE_THREADS_A_SESSION \
  "kiln_session_create: %zu threads (a session runs on at most %d)"
#define KILN_MSG_THE_SUPPLIED_ARENA_HAS_BYTES_THE \
  "the supplied arena has %zu bytes, the model needs %llu"
#define KILN_MSG_THE_SUPPLIED_ARENA_IS_NOT_ALIGNED "the supplied arena is not aligned to %u bytes"
#define KILN_MSG_OUT_OF_MEMORY_ALLOCATING_A_BYTE "out of memory allocating a %llu-byte arena"
#define KILN_MSG_OUT_OF_MEMORY_ALLOCATING_TENSOR "out of memory allocating tensor '%s'"
#define KILN_MSG_OUT_OF_MEMORY_FOR_PROFILES "out of memory for profiles"
#define KILN_MSG_OUT_OF_MEMORY_FOR_TRACES "out of memory for traces"
#define KILN_MSG_SESSION_IS_NULL "%s: session is NULL"
#define KILN_MSG_INDEX_OUT_OF_RANGE_THE_MODEL_2 "%s: index %zu out of range (the model has %u %s)"
#define KILN_MSG_DATA_FOR_IS_NULL "%s: data for '%s' is NULL"
#define KILN_MSG_IS_GIVEN "%s: '%s' is %s, given %s"
#define KILN_MSG_HAS_BYTES_GIVEN "%s: '%s' has %llu bytes, given %zu"
#define KILN_MSG_MEMORY_FOR_IS_NOT_ALIGNED_TO "%s: memory for '%s' is not aligned to %zu bytes"
#define KILN_MSG_KILN_SESSION_BIND_INPUT_HAS_SYMBOLIC \
  "kiln_session_bind_input: '%s' has symbolic dims: set it with kiln_session_set_input_shaped"
#define KILN_MSG_KILN_SESSION_BIND_OUTPUT_HAS_SYMBOLIC                                      \
  "kiln_session_bind_output: '%s' has symbolic dims: read it with kiln_session_output and " \
  "kiln_session_output_shape"
#define KILN_MSG_KILN_SESSION_RUN_SESSION_IS_NULL "kiln_session_run: session is NULL"
#define KILN_MSG_KILN_SESSION_RUN_INPUT_IS_NOT "kiln_session_run: input '%s' is not set"
#define KILN_MSG_KILN_SESSION_OUTPUT_NULL_ARGUMENT "kiln_session_output: NULL argument"
#define KILN_MSG_KILN_SESSION_OUTPUT_INDEX_OUT_OF \
  "kiln_session_output: index %zu out of range (the model has %u outputs)"
#define KILN_MSG_KILN_SESSION_OUTPUT_NO_RUN_HAS \
  "kiln_session_output: no run has completed on this session"
#define KILN_MSG_KILN_SESSION_LAUNCH_COUNT_NULL_ARGUMENT "kiln_session_launch_count: NULL argument"
#define KILN_MSG_KILN_SESSION_LAUNCH_PROFILE_NULL_ARGUMENT \
  "kiln_session_launch_profile: NULL argument"
#define KILN_MSG_KILN_SESSION_LAUNCH_PROFILE_THE_SESSION \
  "kiln_session_launch_profile: the session was created without profile"
#define KILN_MSG_KILN_SESSION_LAUNCH_PROFILE_INDEX_OUT \
  "kiln_session_launch_profile: index %zu out of range"
#define KILN_MSG_KILN_SESSION_TRACE_NULL_ARGUMENT "kiln_session_trace: NULL argument"
#define KILN_MSG_KILN_SESSION_TRACE_THE_SESSION_WAS \
  "kiln_session_trace: the session was created without trace"
#define KILN_MSG_OUT_OF_MEMORY_CREATING_THE_THREAD "out of memory creating the thread pool"
#define KILN_MSG_CANNOT_START_WORKER_THREAD "cannot start worker thread %zu"
#define KILN_MSG_THIS_RUNTIME_IS_BUILT_WITHOUT_THREADS \
  "this runtime is built without threads (KILN_RT_NO_THREADS)"
#define KILN_MSG_KILN_MODEL_HAS_SELFTEST_NULL_ARGUMENT "kiln_model_has_selftest: NULL argument"
#define KILN_MSG_KILN_MODEL_SELFTEST_NULL_ARGUMENT "kiln_model_selftest: NULL argument"
#define KILN_MSG_KILN_MODEL_SELFTEST_REPORT_STRUCT_SIZE \
  "kiln_model_selftest: report->struct_size is %zu, expected %zu"
#define KILN_MSG_KILN_MODEL_SELFTEST_THE_PACKAGE_HAS \
  "kiln_model_selftest: the package has no self-test (compile with --embed-selftest)"

#define KILN_MESSAGE_IDS(M)                      \
  M(KERNEL_CODE_ELF)                             \
  M(KERNEL_CODE_IS_FOR_ELF_MACHINE)              \
  M(CANNOT_MAP_BYTES_FOR_KERNEL_CODE)            \
  M(KERNEL_CODE_ELF_RELOCATION_OF_TYPE)          \
  M(KERNEL_ENTRY_TABLE_VERSION_MAGIC_0X)         \
  M(CANNOT_PROTECT_KERNEL_CODE_MEMORY)           \
  M(CANNOT_PROTECT_RELOCATED_KERNEL_DATA)        \
  M(LAUNCH_READS_SLOT_IT_WRITES)                 \
  M(LAUNCH_READS_SLOT_GROUP_WRITES)              \
  M(THIS_CPU_LACKS_VARIANT_FEATURES)             \
  M(THIS_CPU_LACKS_FEATURES)                     \
  M(AT_BYTE_OFFSET)                              \
  M(SHORTER_THAN_A_FLATBUFFERS_HEADER)           \
  M(NOT_A_KILN_PACKAGE_THE_FILE)                 \
  M(ROOT_TABLE_OUT_OF_BOUNDS)                    \
  M(NO_PROVENANCE)                               \
  M(PACKAGE_FORMAT_THIS_RUNTIME_READS_FORMAT)    \
  M(A_STATIC_LIBRARY_PACKAGE_WITH_KERNEL)        \
  M(ITS_KERNELS_ARE_IN_A_STATIC)                 \
  M(NO_KERNEL_CODE)                              \
  M(IT_CARRIES_ITS_OWN_KERNEL_CODE)              \
  M(THE_CONSTANTS_ARE_NOT_64_BYTE)               \
  M(THE_PACKAGE_S_SHA_256_IS)                    \
  M(THE_PACKAGE_IS_NOT_SIGNED_AND)               \
  M(THE_PACKAGE_S_SIGNATURE_IS_MALFORMED)        \
  M(THE_PACKAGE_IS_SIGNED_BY_KEY)                \
  M(NO_METADATA_CHECKSUM)                        \
  M(THE_PACKAGE_S_SIGNATURE_BY_KEY)              \
  M(OVERLAPPING_SECTIONS)                        \
  M(CHECKSUM_MISMATCH_IN_THE_PACKAGE_METADATA)   \
  M(A_SECTION_WITHOUT_A_NAME)                    \
  M(CHECKSUM_MISMATCH_IN_SECTION_THE_FILE)       \
  M(THE_CODE_AND_CONSTANTS_SECTIONS_MUST)        \
  M(NO_TARGET)                                   \
  M(NO_TARGET_TRIPLE)                            \
  M(THE_PACKAGE_IS_COMPILED_FOR_THIS)            \
  M(REQUIRED_CPU_FEATURES_THE_LIMIT_IS)          \
  M(A_MALFORMED_CPU_FEATURE)                     \
  M(THE_PACKAGE_REQUIRES_CPU_FEATURE_WHICH)      \
  M(VARIANTS_THE_LIMIT_IS_A_STATIC)              \
  M(A_TARGET_WITHOUT_A_CPU_NAME)                 \
  M(THE_PACKAGE_HAS_NO_VARIANT_KILN)             \
  M(A_VARIANT_WITHOUT_KERNEL_CODE)               \
  M(THE_LIMIT_IS)                                \
  M(OUT_OF_MEMORY_LOADING_TENSOR_DESCRIPTIONS)   \
  M(A_TENSOR_WITHOUT_A_NAME)                     \
  M(TENSOR_HAS_RANK_THE_LIMIT_IS)                \
  M(TENSOR_HAS_DTYPE)                            \
  M(TENSOR_HAS_A_BAD_SHAPE)                      \
  M(TENSOR_IS_TOO_LARGE)                         \
  M(OUT_OF_MEMORY_COPYING_TENSOR_DESCRIPTIONS)   \
  M(THE_SELF_TEST_HAS_FOR)                       \
  M(OUT_OF_MEMORY_LOADING_THE_SELF)              \
  M(SELF_TEST_HAS_BYTES_HAS)                     \
  M(THE_SELF_TEST_TOLERANCE_IS_NOT)              \
  M(SLOT_LIES_OUTSIDE_THE_ARENA_OR)              \
  M(SLOT_HAS_AN_EMPTY_LIFETIME)                  \
  M(SLOT_LIES_OUTSIDE_THE_CONSTANTS_OR)          \
  M(SLOT_DOES_NOT_MATCH)                         \
  M(SLOT_HAS_KIND)                               \
  M(THE_ARENA_ALIGNMENT_IS_NOT_A)                \
  M(THE_ARENA_IS_TOO_LARGE)                      \
  M(SLOTS_THE_LIMIT_IS)                          \
  M(OUT_OF_MEMORY_LOADING_SLOTS)                 \
  M(SLOT_HAS_DTYPE)                              \
  M(SLOT_SIZE_DOES_NOT_MATCH_ELEMENTS)           \
  M(DOES_NOT_OWN_AN_SLOT)                        \
  M(SYMBOLS_THE_LIMIT_IS)                        \
  M(OUT_OF_MEMORY_LOADING_SYMBOLS)               \
  M(SYMBOL_HAS_NO_NAME_OR_THE)                   \
  M(OUTPUT_HAS_EXTENT_PROGRAMS)                  \
  M(OUTPUT_AXIS_A_MALFORMED_EXTENT_PROGRAM)      \
  M(INPUT_HAS_AXIS_SYMBOLS)                      \
  M(INPUT_AXIS_SYMBOL_NOT_LAID_OUT)              \
  M(NO_INPUT_SETS_THE_SYMBOL)                    \
  M(INPUT_VALUE_SYMBOLS)                         \
  M(CHECK_MALFORMED)                             \
  M(KILN_SESSION_RUN_CHECK)                      \
  M(KILN_SESSION_RUN_LOOP_PAST)                  \
  M(KILN_SESSION_RUN_LOOP_COUNT)                 \
  M(LOOP_MALFORMED)                              \
  M(SLOT_LIVES_IN_PART_OF_LOOP)                  \
  M(COUNT_MALFORMED)                             \
  M(KILN_SESSION_RUN_COUNT)                      \
  M(OUT_OF_MEMORY_CREATING_A_SESSION)            \
  M(KILN_SESSION_RUN_INPUT_AXIS_IS)              \
  M(KILN_SESSION_RUN_OUTPUT_LEAVES_ITS)          \
  M(KILN_SESSION_SET_INPUT_SHAPED_NULL)          \
  M(KILN_SESSION_SET_INPUT_SHAPED_HAS)           \
  M(KILN_SESSION_SET_INPUT_SHAPED_STATIC_AXIS)   \
  M(KILN_SESSION_SET_INPUT_SHAPED_AXIS)          \
  M(KILN_SESSION_SET_INPUT_SHAPED_OF)            \
  M(KILN_SESSION_OUTPUT_SHAPE_NULL_ARGUMENT)     \
  M(KILN_MODEL_SYMBOL_INFO_NULL_ARGUMENT)        \
  M(KILN_MODEL_SYMBOL_COUNT_NULL_ARGUMENT)       \
  M(OUT_OF_MEMORY_LOADING_KERNELS)               \
  M(KERNEL_IS_ENTRY_OF)                          \
  M(KERNEL_S_ARGUMENTS_OR_ACCESS_EXTENTS)        \
  M(KERNELS_THE_LIMIT_IS)                        \
  M(KERNEL_HAS_A_BAD_NAME_OR)                    \
  M(THE_PACKAGE_CHANGED_WHILE_LOADING)           \
  M(LAUNCH_ARGUMENT_NAMES_SLOT_OF)               \
  M(LAUNCH_ARGUMENT_HAS_DTYPE_KERNEL_WANTS)      \
  M(LAUNCH_ARGUMENT_KERNEL_TOUCHES_BYTES_OF)     \
  M(KERNEL_ARGUMENT_ACCESS)                      \
  M(LAUNCH_WRITES_AN_INPUT_OR_A)                 \
  M(SLOT_IS_WRITTEN_TWICE)                       \
  M(SLOT_IS_WRITTEN_AND_READ_IN)                 \
  M(SLOT_IS_WRITTEN_IN_GROUP_OUTSIDE)            \
  M(LAUNCH_IN_GROUP_READS_SLOT_BEFORE)           \
  M(SLOT_IS_READ_IN_GROUP_OUTSIDE)               \
  M(LAUNCH_NAMES_KERNEL_OF)                      \
  M(LAUNCH_PASSES_ARGUMENTS_KERNEL_TAKES)        \
  M(LAUNCH_HAS_TASKS)                            \
  M(TOO_MANY_TASKS_IN_A_GROUP)                   \
  M(SLOT_IS_NEVER_WRITTEN)                       \
  M(GROUPS_THE_LIMIT_IS)                         \
  M(TOO_MANY_LAUNCHES)                           \
  M(TOO_MANY_LAUNCH_ARGUMENTS)                   \
  M(OUT_OF_MEMORY_LOADING_THE_SCHEDULE)          \
  M(SLOT_LIVES_PAST_THE_LAST_GROUP)              \
  M(OUT_OF_MEMORY_VERIFYING_THE_MEMORY)          \
  M(ARENA_SLOT_OVERLAPS_ANOTHER_WHILE_BOTH)      \
  M(SLOT_IS_IN_PLACE_OF_NO_ARENA_SLOT)           \
  M(SLOT_IS_IN_PLACE_OF_BUT_DOES_NOT_FOLLOW)     \
  M(KILN_MODEL_LOAD_STATIC_KERNELS_IS)           \
  M(THE_LINKED_KERNELS_ID_BELONG_TO)             \
  M(A_STATIC_TABLE_OF_TOO_MANY)                  \
  M(KILN_MODEL_OPTIONS_STRUCT_SIZE_IS)           \
  M(THE_ALLOCATOR_NEEDS_BOTH_ALLOC_AND)          \
  M(KILN_MODEL_OPTIONS_TRUSTED_KEYS_AT)          \
  M(KILN_MODEL_OPTIONS_REQUIRE_SIGNATURE_NEEDS)  \
  M(KILN_MODEL_LOAD_FILE_OUT_MODEL)              \
  M(KILN_MODEL_LOAD_FILE_PATH_IS)                \
  M(CANNOT_OPEN)                                 \
  M(IS_NOT_A_REGULAR_FILE)                       \
  M(HAS_BYTES)                                   \
  M(CANNOT_MAP)                                  \
  M(OUT_OF_MEMORY_LOADING)                       \
  M(OUT_MODEL_IS_NULL)                           \
  M(DATA_IS_NULL)                                \
  M(OUT_OF_MEMORY_LOADING_A_PACKAGE)             \
  M(OUT_OF_MEMORY_COPYING_A_BYTE)                \
  M(KILN_MODEL_LOAD_STATIC_KERNELS_IS_2)         \
  M(KILN_MODEL_RELEASE_SESSION_S_STILL)          \
  M(KILN_MODEL_INPUT_COUNT_NULL_ARGUMENT)        \
  M(KILN_MODEL_OUTPUT_COUNT_NULL_ARGUMENT)       \
  M(OUT_INFO_IS_NULL)                            \
  M(OUT_INFO_STRUCT_SIZE_IS_EXPECTED)            \
  M(INDEX_OUT_OF_RANGE_THE_MODEL)                \
  M(KILN_MODEL_INPUT_INFO_MODEL_IS)              \
  M(KILN_MODEL_OUTPUT_INFO_MODEL_IS)             \
  M(NULL_ARGUMENT)                               \
  M(NO_TENSOR_NAMED)                             \
  M(KILN_MODEL_FIND_INPUT_MODEL_IS)              \
  M(KILN_MODEL_FIND_OUTPUT_MODEL_IS)             \
  M(KILN_MODEL_ARENA_REQUIREMENTS_NULL_ARGUMENT) \
  M(KILN_MODEL_KERNEL_COUNT_NULL_ARGUMENT)       \
  M(KILN_MODEL_KERNEL_NAME_NULL_ARGUMENT)        \
  M(KILN_MODEL_KERNEL_NAME_INDEX_OUT)            \
  M(KILN_MODEL_LAUNCH_COUNT_NULL_ARGUMENT)       \
  M(KILN_MODEL_LAUNCH_INFO_NULL_ARGUMENT)        \
  M(KILN_MODEL_LAUNCH_INFO_STRUCT_SIZE)          \
  M(KILN_MODEL_LAUNCH_INFO_INDEX_OUT)            \
  M(KILN_MODEL_VARIANT_COUNT_NULL_ARGUMENT)      \
  M(KILN_MODEL_VARIANT_INFO_NULL_ARGUMENT)       \
  M(KILN_MODEL_VARIANT_INFO_STRUCT_SIZE)         \
  M(KILN_MODEL_VARIANT_INFO_INDEX_OUT)           \
  M(KILN_SESSION_CREATE_OUT_SESSION_IS)          \
  M(KILN_SESSION_CREATE_MODEL_IS_NULL)           \
  M(KILN_SESSION_OPTIONS_STRUCT_SIZE_IS)         \
  M(KILN_SESSION_CREATE_THREADS_A_SESSION)       \
  M(THE_SUPPLIED_ARENA_HAS_BYTES_THE)            \
  M(THE_SUPPLIED_ARENA_IS_NOT_ALIGNED)           \
  M(OUT_OF_MEMORY_ALLOCATING_A_BYTE)             \
  M(OUT_OF_MEMORY_ALLOCATING_TENSOR)             \
  M(OUT_OF_MEMORY_FOR_PROFILES)                  \
  M(OUT_OF_MEMORY_FOR_TRACES)                    \
  M(SESSION_IS_NULL)                             \
  M(INDEX_OUT_OF_RANGE_THE_MODEL_2)              \
  M(DATA_FOR_IS_NULL)                            \
  M(IS_GIVEN)                                    \
  M(HAS_BYTES_GIVEN)                             \
  M(MEMORY_FOR_IS_NOT_ALIGNED_TO)                \
  M(KILN_SESSION_BIND_INPUT_HAS_SYMBOLIC)        \
  M(KILN_SESSION_BIND_OUTPUT_HAS_SYMBOLIC)       \
  M(KILN_SESSION_RUN_SESSION_IS_NULL)            \
  M(KILN_SESSION_RUN_INPUT_IS_NOT)               \
  M(KILN_SESSION_OUTPUT_NULL_ARGUMENT)           \
  M(KILN_SESSION_OUTPUT_INDEX_OUT_OF)            \
  M(KILN_SESSION_OUTPUT_NO_RUN_HAS)              \
  M(KILN_SESSION_LAUNCH_COUNT_NULL_ARGUMENT)     \
  M(KILN_SESSION_LAUNCH_PROFILE_NULL_ARGUMENT)   \
  M(KILN_SESSION_LAUNCH_PROFILE_THE_SESSION)     \
  M(KILN_SESSION_LAUNCH_PROFILE_INDEX_OUT)       \
  M(KILN_SESSION_TRACE_NULL_ARGUMENT)            \
  M(KILN_SESSION_TRACE_THE_SESSION_WAS)          \
  M(OUT_OF_MEMORY_CREATING_THE_THREAD)           \
  M(CANNOT_START_WORKER_THREAD)                  \
  M(THIS_RUNTIME_IS_BUILT_WITHOUT_THREADS)       \
  M(KILN_MODEL_HAS_SELFTEST_NULL_ARGUMENT)       \
  M(KILN_MODEL_SELFTEST_NULL_ARGUMENT)           \
  M(KILN_MODEL_SELFTEST_REPORT_STRUCT_SIZE)      \
  M(KILN_MODEL_SELFTEST_THE_PACKAGE_HAS)

#ifdef KILN_RT_AMALGAMATION
#include "messages_packed.h"
typedef unsigned kiln_message;
#define KM(id) ((kiln_message)KILN_MSG_AT_##id)
#else
typedef const char* kiln_message;
#define KM(id) KILN_MSG_##id
#endif

#endif /* KILN_RT_MESSAGES_H_ */
