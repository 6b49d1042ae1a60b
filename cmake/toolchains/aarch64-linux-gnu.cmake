# Cross build of the runtime, kiln-run and the samples for AArch64 Linux with Debian's
# gcc-aarch64-linux-gnu (tools/scripts/install-deps.sh installs it). The compiler (kilnc) is not
# cross-built: it runs on the workstation and targets AArch64 with --target aarch64-linux-gnu.
#
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#   ninja -C build-aarch64
#   qemu-aarch64 -L /usr/aarch64-linux-gnu build-aarch64/tools/kiln-run/kiln-run model.kiln --info
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Run cross-built programs (try_run, tests) under user-mode emulation.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
set(KILN_BUILD_COMPILER OFF CACHE BOOL "kilnc is built for the host only" FORCE)
