# pario: `make test` is the one command that checks everything (CI runs it).
# It installs the Debian packages the tests need when they are missing.

GO        ?= go
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Packages with concurrency run under the race detector.
RACE_PKGS = ./wire/... ./vfs/... ./client/... ./cluster/... ./server/... ./rank/... ./pattern/... ./bench/... ./tune/... ./fusefs/... ./medic/...

.PHONY: all build build-hdf5 test test-hdf5 deps lint unit race fuzz bench-store clean

all: build

build:
	$(GO) build -o bin/pario ./cmd/pario

# build-hdf5 adds the cgo back ends -a MPIIO, HDF5 and NC4 (build tag hdf5; docs/hdf5.md).
build-hdf5:
	$(GO) build -tags hdf5 -o bin/pario-hdf5 ./cmd/pario

# deps installs what the tests need beyond Go, when missing: iproute2 (ip netns, the multi-host
# test), openmpi-bin (mpirun tests), fuse3 + rsync + attr + mrbayes (the mount tests and the
# MrBayes run), ncbi-blast+ and mmseqs2-examples (the BLAST plugin on real data). Needs root
# (or sudo); `.ci/run` installs the same list. hmmer, hmmer-examples and parallel: `pario farm`'s
# real-tool tests and scripts/compare-farm.sh. The cgo back ends (make build-hdf5, test-hdf5) need
# pkg-config, parallel HDF5 and NetCDF-4 built on Open MPI, and h5dump / ncdump to check the files
# they write.
MULTIARCH := $(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
DEB_NEEDS = ip:iproute2 mpirun:openmpi-bin mpicc:libopenmpi-dev fusermount3:fuse3 rsync:rsync getfattr:attr mb:mrbayes \
	blastp:ncbi-blast+ /usr/share/doc/mmseqs2/example-data/DB.fasta.gz:mmseqs2-examples \
	hmmscan:hmmer /usr/share/doc/hmmer/examples/tutorial/globins45.fa:hmmer-examples parallel:parallel \
	pkg-config:pkgconf h5pcc.openmpi:libhdf5-openmpi-dev /usr/lib/$(MULTIARCH)/pkgconfig/netcdf-mpi.pc:libnetcdf-mpi-dev \
	h5dump:hdf5-tools ncdump:netcdf-bin useradd:passwd setpriv:util-linux git:git python3:python3 /usr/share/doc/python3-venv:python3-venv

deps:
	@missing=""; \
	for need in $(DEB_NEEDS); do \
		what=$${need%%:*}; pkg=$${need#*:}; \
		if [ -e "$$what" ] || command -v "$$what" >/dev/null 2>&1; then continue; fi; \
		missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

# unit also runs every benchmark once: a benchmark nothing runs broke silently
# when the protocol changed (BenchmarkHandler, protocol 8).
unit:
	$(GO) test -count=1 -timeout 25m ./...
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./...
	$(GO) vet -tags wirenomac ./wire
	$(GO) test -tags wirenomac -count=1 -run NoMAC ./wire

race:
	$(GO) test -count=1 -timeout 25m -race $(RACE_PKGS)

# test-hdf5 vets the cgo back ends and writes a file with each under mpirun, checked with
# h5dump and ncdump.
test-hdf5:
	$(GO) vet -tags hdf5 ./bench/backend/... ./hdf5/... ./cmd/pario
	$(GO) run $(STATICCHECK) -tags hdf5 ./bench/backend/... ./hdf5/...
	$(GO) test -tags hdf5 -count=1 ./bench/backend/hdf5/ ./hdf5/inspect/

test: deps lint unit race test-hdf5

# fuzz runs every fuzz target for FUZZTIME each (seed corpora run in `make test`).
FUZZTIME ?= 30s
fuzz:
	@grep -rl --include='*_test.go' '^func Fuzz' . | while read f; do \
		pkg=$$(dirname $$f); \
		for fn in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
			echo "== $$pkg $$fn"; $(GO) test -run='^$$' -fuzz="^$$fn$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

bench-store:
	scripts/bench-store.sh

clean:
	rm -rf bin tmp
