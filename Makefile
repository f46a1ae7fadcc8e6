# Quick start: `make demo` (the main job, killed and resumed) and `make test` (all tests).
# Each target installs what it needs (Debian packages, a virtualenv, the build) and is safe to rerun.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
APT_PACKAGES := g++ pkg-config nlohmann-json3-dev libgtest-dev libgmock-dev \
  libzstd-dev libbrotli-dev libsnappy-dev libhighwayhash-dev zlib1g-dev libisal-dev \
  libjpeg62-turbo-dev libwebp-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CPP_BUILD := build/cpp
JOBS ?= 2

.PHONY: demo demo-lm demo-vision test test-multihost test-ray test-torch test-keras bench setup cpp python test-cpp test-python test-install soak fuzz fuzz-build \
  fuzz-tfrecord clean format wheel test-wheel

$(VENV)/.deps: requirements-dev.txt
	@dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $(APT_PACKAGES))
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

setup: $(VENV)/.deps

# The Python package, installed editable by scikit-build-core: Python files are used in
# place; rerun after C++ changes (incremental: the build dir persists).
python: setup
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip install -q --no-build-isolation --no-deps -e .

# libspelt, the GoogleTest suite and the C++ examples, with no Python module involved; with
# libspelt_arrow (Arrow C++'s filesystems, from the venv's pyarrow) and its example, which a
# test runs against an S3 server on loopback that the venv's Python starts.
cpp: setup
	PATH=$(abspath $(VENV))/bin:$$PATH cmake -S . -B $(CPP_BUILD) -G Ninja -DSPELT_BUILD_TESTS=ON \
	  -DPython_EXECUTABLE=$(abspath $(PY)) >/dev/null
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(CPP_BUILD) -j $(JOBS)

test-cpp: cpp
	PATH=$(abspath $(VENV))/bin:$$PATH ctest --test-dir $(CPP_BUILD) --output-on-failure -j $(JOBS)

test-python: python
	$(VENV)/bin/ruff format --check --quiet python tests bench examples cpp/fuzz
	$(PY) -m pytest -q tests --ignore=tests/distributed --ignore=tests/torch_keras \
	  --ignore=tests/wheel

# Multi-host JAX alone (docs/multihost.md): up to 4 local jax.distributed processes (CPU, gloo)
# per case, about 2-3 minutes on 2 cores. Part of test-python (so of `make test` and
# .ci/run) too.
test-multihost: python
	$(PY) -m pytest -q tests/multihost

# The Ray executor (spelt.experimental.RayOptions): installs Ray (the spelt[ray] extra, with
# Ray Data for bench D2) and runs tests/distributed on local Ray clusters that the tests start
# and stop (2 CPUs; a two-node ray.cluster_utils.Cluster). Not in `make test`: Ray's clusters
# take a few minutes to start on 2 cores. .ci/run runs it.
$(VENV)/.ray: requirements-ray.txt $(VENV)/.deps
	$(PY) -m pip install -q -r requirements-ray.txt
	touch $@

test-ray: python $(VENV)/.ray
	$(PY) -m pytest -q tests/distributed

# spelt.torch and spelt.keras: install the CPU build of torch (requirements-torch.txt, the
# spelt-ml[torch] extra) and Keras 3 (requirements-keras.txt, spelt-ml[keras]) and run
# tests/torch_keras. Not in `make test` (torch is a large download); .ci/run runs both.
$(VENV)/.torch: requirements-torch.txt $(VENV)/.deps
	$(PY) -m pip install -q -r requirements-torch.txt
	touch $@

test-torch: python $(VENV)/.torch
	$(PY) -m pytest -q tests/torch_keras/test_torch.py

$(VENV)/.keras: requirements-keras.txt $(VENV)/.torch
	$(PY) -m pip install -q -r requirements-keras.txt
	touch $@

test-keras: python $(VENV)/.keras
	$(PY) -m pytest -q tests/torch_keras/test_keras.py

# A self-contained manylinux wheel for the running CPython (docs/install.md): pip builds it
# (-v: CMake's progress shows; in the build dir of `make python`, so after it only the
# packaging runs), then auditwheel checks the glibc floor (manylinux_2_28, see
# cmake/spelt-portable.cmake), grafts ISA-L into it and prints the tag. pyarrow's libraries
# are left out: spelt._parquet_native loads them from the user's pyarrow (and, with a pyarrow
# of another ABI, Spelt reads Parquet through pyarrow's Python API).
WHEEL_DIR := build/dist
WHEEL_PLAT := manylinux_2_28_$(shell uname -m)
wheel: setup
	rm -rf $(WHEEL_DIR)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip wheel -v --no-build-isolation --no-deps \
	  -w $(WHEEL_DIR)/raw .
	PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/auditwheel repair --plat $(WHEEL_PLAT) --exclude 'libarrow.so.*' \
	  --exclude 'libparquet.so.*' --exclude 'libarrow_s3.so.*' -w $(WHEEL_DIR) $(WHEEL_DIR)/raw/*.whl
	$(VENV)/bin/auditwheel show $(WHEEL_DIR)/*.whl
	@echo "(auditwheel show's first line says linux_x86_64 only because spelt._parquet_native links" \
	  "pyarrow's libparquet, which the wheel leaves to pyarrow; its symbols give the tag above)"
	@ls -l $(WHEEL_DIR)/*.whl | awk '{printf "wheel: %s (%.1f MB)\n", $$NF, $$5 / 1e6}'

# Installs the wheel into a new venv and runs the pytest suite against the installed package,
# in a private mount namespace where the system's zstd, brotli, snappy, highwayhash, ISA-L,
# libjpeg and libwebp are unreadable (tests/wheel/hide_system_codecs.sh); tests/wheel checks that spelt comes from
# the wheel and that its modules load no library from the system but glibc's and libgcc_s.
WHEEL_VENV := build/wheel-venv
test-wheel: wheel
	rm -rf $(WHEEL_VENV)
	python3 -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install -q --upgrade pip
	$(WHEEL_VENV)/bin/python -m pip install -q -r requirements-dev.txt $(WHEEL_DIR)/*.whl
	SPELT_WHEEL=$$(ls $(WHEEL_DIR)/*.whl) tests/wheel/hide_system_codecs.sh \
	  $(WHEEL_VENV)/bin/python -m pytest -q -p no:cacheprovider tests \
	  --ignore=tests/distributed --ignore=tests/torch_keras

# Installs libspelt into build/install (headers, libspelt.a, CMake package, spelt.pc) and builds
# and runs examples/find_package against it: once with find_package(spelt), once with pkg-config.
INSTALL_PREFIX := build/install
EXAMPLE_BUILD := build/find_package
test-install: cpp
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --install $(CPP_BUILD) --prefix $(INSTALL_PREFIX) >/dev/null
	PATH=$(abspath $(VENV))/bin:$$PATH cmake -S examples/find_package -B $(EXAMPLE_BUILD) -G Ninja \
	  -DCMAKE_PREFIX_PATH=$(abspath $(INSTALL_PREFIX)) >/dev/null
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(EXAMPLE_BUILD)
	$(EXAMPLE_BUILD)/array_record_pipeline $(EXAMPLE_BUILD)/cmake.array_record
	$(CXX) -O2 examples/find_package/main.cc -o $(EXAMPLE_BUILD)/array_record_pipeline_pc \
	  $$(PKG_CONFIG_PATH=$$(dirname $$(find $(INSTALL_PREFIX) -name spelt.pc)) \
	     pkg-config --static --cflags --libs spelt)
	$(EXAMPLE_BUILD)/array_record_pipeline_pc $(EXAMPLE_BUILD)/pkg_config.array_record

test: test-cpp test-python test-install

demo: python
	$(PY) examples/demo.py

# The LM input job: stdlib source -> BPE tokens -> ArrayRecord -> shuffle -> pack -> batch,
# a tiny numpy LM trained on it, killed with SIGKILL and resumed exactly (examples/lm_demo.py).
demo-lm: python
	$(PY) examples/lm_demo.py

# The vision job: JPEGs cut from scikit-learn's photographs -> ArrayRecord -> the native
# spelt.vision train recipe -> a tiny numpy classifier, killed with SIGKILL and resumed exactly,
# with images/s beside the same pipeline in Pillow under Spelt and Grain (examples/vision_demo.py).
demo-vision: python
	$(PY) examples/vision_demo.py

# What only the benchmarks use (requirements-bench.txt: simplejpeg for bench_vision's V2; nginx
# with its Lua module: bench_remote's store for reads, bench/nginx_s3.py).
BENCH_APT_PACKAGES := nginx-light libnginx-mod-http-lua
$(VENV)/.bench: requirements-bench.txt $(VENV)/.deps
	@dpkg -s $(BENCH_APT_PACKAGES) >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $(BENCH_APT_PACKAGES)) || \
	  echo "could not install $(BENCH_APT_PACKAGES): bench_remote reads from bench/static_s3.py"
	$(PY) -m pip install -q -r requirements-bench.txt
	touch $@

bench: python cpp $(VENV)/.ray $(VENV)/.bench
	$(PY) bench/bench.py

# Reads a 2-worker pipeline and an ArrayRecord pipeline for SOAK_MINUTES (default 10), printing
# RSS and open fds of the consumer and its workers each minute; fails if RSS grows > 5% after
# the first minute or the fd count changes. Not part of `make test`.
SOAK_MINUTES ?= 10
soak: python
	$(PY) bench/soak.py --minutes $(SOAK_MINUTES)

# Fuzzes the ArrayRecord reader, then the TFRecord reader (fuzz-tfrecord), under ASan + UBSan
# (FUZZ_SECONDS each, default 300). Not part of `make test`; needs clang (installed here if
# missing).
FUZZ_SECONDS ?= 300
FUZZ_BUILD := build/fuzz
fuzz-build: python
	@command -v clang++ >/dev/null || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq clang)
	PATH=$(abspath $(VENV))/bin:$$PATH CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DSPELT_BUILD_FUZZERS=ON >/dev/null
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(FUZZ_BUILD) --target array_record_fuzz tfrecord_fuzz -j $(JOBS)

fuzz: fuzz-build
	$(PY) cpp/fuzz/seed_corpus.py $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/array_record_fuzz -max_len=300000 -max_total_time=$(FUZZ_SECONDS) $(FUZZ_BUILD)/corpus
	$(MAKE) fuzz-tfrecord

fuzz-tfrecord: fuzz-build
	$(PY) cpp/fuzz/tfrecord_seed_corpus.py $(FUZZ_BUILD)/tfrecord_corpus
	$(FUZZ_BUILD)/tfrecord_fuzz -max_len=70000 -timeout=10 -max_total_time=$(FUZZ_SECONDS) \
	  $(FUZZ_BUILD)/tfrecord_corpus

# Applies the one Python style (PEP 8 via ruff, configured in pyproject.toml).
format: setup
	$(VENV)/bin/ruff format python tests bench examples cpp/fuzz

clean:
	rm -rf build $(VENV)
