# Sourced by install_deps.sh and check_packages.sh: the Debian packages
# ehprof needs, by need, named as the release at hand names them.
#   ehprof_packages build [APT-OPTION...]  building ehprof and running the demo
#   ehprof_packages test  [APT-OPTION...]  what only the tests and benchmarks need
# The APT-OPTIONs (-o ...) let check_packages.sh ask another release's lists.
# Version-suffixed packages follow the release's default clang (clang-14 on
# Debian 12, clang-19 on Debian 13): libclang-rt-N-dev holds libFuzzer.

# The major version of the clang package the release's "clang" depends on.
ehprof_clang_major() {
  apt-cache "$@" depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n1
}

# Those of the named packages the release has.
ehprof_if_available() {
  local opts=() p
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  for p in "$@"; do
    # (a purely virtual package, named only by others, has no Package: stanza)
    apt-cache "${opts[@]}" show --no-all-versions "$p" 2>/dev/null | grep '^Package:' >/dev/null && echo "$p"
  done
  return 0
}

ehprof_packages() {
  local set=$1
  shift
  case $set in
    build)
      # clang compiles the C++ and the BPF programs and links (it pulls in
      # libc6-dev, libstdc++-dev and binutils); gcc, llvm's tools and git
      # are the test set's.
      echo make cmake pkg-config python3 \
        libelf-dev libdw-dev zlib1g-dev libzstd-dev liblzma-dev libabsl-dev \
        clang libbpf-dev bpftool \
        libcurl4-openssl-dev `# ehprof agent --pyroscope (HTTP, TLS)` \
        libmicrohttpd-dev `# ehprof agent --metrics-addr (Prometheus scrape endpoint)` \
        libcli11-dev `# the command line (options, generated help)` \
        fio `# the demo's workload`
      ;;
    test)
      local major
      major=$(ehprof_clang_major "$@")
      if [[ -z $major ]]; then
        echo "packages.sh: apt knows no package clang depending on clang-N (apt-get update?)" >&2
        return 1
      fi
      echo build-essential `# gcc builds the C test programs (testdata/); g++ builds ehprof too (scripts/build_gcc.sh)` \
        llvm git `# git: ehprof --version names the commit` \
        ccache `# the three builds (clang, g++, arm64) of a clone reuse what another clone on the machine compiled (scripts/ccache_env.sh)` \
        libgtest-dev libgmock-dev libbenchmark-dev \
        "libclang-rt-$major-dev" `# libFuzzer (-fsanitize=fuzzer)` \
        elfutils binutils linux-perf libc6-dbg libgcrypt20 gdb \
        golang-go chromium fonts-dejavu-core debuginfod \
        python3-venv `# py-spy's venv (scripts/install_pyspy.sh)` \
        nodejs `# the JIT test (tests/record_node_priv_test.cc) profiles /usr/bin/node` \
        binutils-aarch64-linux-gnu qemu-user `# aarch64 table tests link testdata/a64_cfi.S; qemu-user runs the arm64 build` \
        util-linux `# setpriv: the capability tests run ehprof as uid 65534 with chosen capabilities` \
        qemu-system-x86 busybox-static kmod `# the kernel matrix (scripts/kernel_matrix.sh)` \
        systemd `# systemd-analyze verify of packaging/ehprof-agent.service` \
        libbpf-tools `# offcputime, the peer bench/offcpu_overhead.py runs beside ehprof --off-cpu` \
        systemtap-sdt-dev `# sys/sdt.h: the USDT probe in testdata/probe_calls.c` \
        bpftrace `# the peer bench/uprobe_stacks.py runs beside ehprof -e uprobe: (ustack by frame pointers)` \
        protobuf-compiler libprotobuf-dev golang-github-google-pprof-dev `# tests decode pprof with classes protoc generates from pprof's own profile.proto` \
        help2man `# the man page (cmake --install, the Debian package)` \
        mmdebstrap `# the Debian package's install test (a clean Debian root); the agent's OCI image (scripts/build_image.sh)` \
        podman runc `# the agent's image run beside other containers (tests/container_agent_priv_test.cc: podman --runtime runc)` \
        python3-yaml `# tests/deploy_chart_test.py reads helm's rendered manifests (run by /usr/bin/python3)` \
        prometheus `# the real Prometheus scrapes ehprof agent --metrics-addr; promtool checks deploy/prometheus's rules` \
        default-jdk-headless maven `# the JVM tests and bench: javac, jcmd; mvn fetches async-profiler (scripts/install_async_profiler.sh)`
      # The reference binaries tests/ and bench/ read by path are Debian 12's
      # (libLLVM-15.so.1, python3.11, libpython3.11: testdata/late_python
      # dlopen()s it); a release without them goes without.
      # openjdk-17-jdk-headless: java, javac and javap of Debian 12's JDK 17
      # (tests/jvm_layout_priv_test.cc, bench/jvm_stacks.py).
      ehprof_if_available "$@" -- libllvm15 python3.11 libpython3.11 openjdk-17-jdk-headless
      # ruby3.1: Debian 12's stripped libruby-3.1 (tests/ruby_objects_test.cc,
      # tests/record_ruby_priv_test.cc, bench/ruby_vs_rbspy.py).
      ehprof_if_available "$@" -- ruby3.1
      # PHP 8.2 (Debian 12's): the PHP frame tests (tests/php_*_test.cc,
      # tests/record_php_priv_test.cc) run php8.2 and php-fpm8.2 by path;
      # php-excimer is the reference bench/php_vs_excimer.py compares with.
      ehprof_if_available "$@" -- php8.2-cli php8.2-fpm php-excimer
      # Devel::NYTProf: the reference bench/perl_vs_nytprof.py compares the
      # Perl walk's leaf subs with (its exclusive sub times).
      ehprof_if_available "$@" -- libdevel-nytprof-perl
      # php-codesniffer and composer: real PHP programs bench/real_programs.py
      # and bench/php_real_program.py record (Debian 12's; trixie has no
      # php-codesniffer).
      ehprof_if_available "$@" -- php-codesniffer composer
      ;;
    *)
      echo "packages.sh: no package set '$set' (build, test)" >&2
      return 1
      ;;
  esac
}
