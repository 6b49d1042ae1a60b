# Every external dependency of the compiler, found once. The runtime depends on none of these.

find_package(LLVM 19.1 REQUIRED CONFIG PATHS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
find_package(LLD REQUIRED CONFIG PATHS /usr/lib/llvm-19/lib/cmake/lld NO_DEFAULT_PATH)
message(STATUS "kiln: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")

# LLVM as one shared library (libLLVM-19.so), the way Debian ships it.
add_library(kiln_llvm INTERFACE)
target_include_directories(kiln_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS} ${LLD_INCLUDE_DIRS})
separate_arguments(_llvm_defs NATIVE_COMMAND "${LLVM_DEFINITIONS}")
target_compile_definitions(kiln_llvm INTERFACE ${_llvm_defs})
find_library(KILN_LIBLLVM NAMES LLVM-19 LLVM PATHS ${LLVM_LIBRARY_DIR} NO_DEFAULT_PATH REQUIRED)
target_link_libraries(kiln_llvm INTERFACE ${KILN_LIBLLVM})

# lld's ELF driver, linked in process. Its static libraries need zlib and zstd.
find_package(ZLIB REQUIRED)
find_library(KILN_ZSTD NAMES zstd REQUIRED)
add_library(kiln_lld INTERFACE)
target_link_libraries(kiln_lld INTERFACE lldELF lldCommon kiln_llvm ZLIB::ZLIB ${KILN_ZSTD})

find_package(FlatBuffers REQUIRED CONFIG)
find_program(KILN_FLATC flatc REQUIRED)

find_package(PkgConfig REQUIRED)
pkg_check_modules(FFI REQUIRED IMPORTED_TARGET libffi)

find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED CONFIG)

find_package(GTest REQUIRED CONFIG)
find_package(benchmark CONFIG)
find_package(Threads REQUIRED)
