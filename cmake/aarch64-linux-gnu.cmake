# Cross-compiling ehprof for arm64 on another Debian host:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# (scripts/build.sh --arch arm64). clang targets aarch64-linux-gnu and
# links with binutils-aarch64-linux-gnu's ld; headers and libraries are
# Debian's arm64 multiarch -dev packages (dpkg --add-architecture arm64;
# scripts/install_arm64_deps.sh), found under /usr/lib/aarch64-linux-gnu.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER clang)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_CXX_COMPILER clang++)
set(CMAKE_CXX_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_ASM_COMPILER clang)
set(CMAKE_ASM_COMPILER_TARGET aarch64-linux-gnu)
# pkg-config reads the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# Programs (bpftool, the BPF clang) are the host's; libraries and headers
# the target's multiarch ones.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
