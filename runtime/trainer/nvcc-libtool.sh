#!/bin/sh
# SPDX-License-Identifier: MIT
# nvcc-libtool.sh NVCC ARGS... — lets libtool compile CUDA sources: libtool adds host-compiler
# flags such as -fPIC for shared objects, which nvcc accepts only through -Xcompiler.
nvcc=$1
shift
for arg do
	shift
	case $arg in
	-fPIC | -fpic | -fno-common) set -- "$@" --compiler-options="$arg" ;;
	*) set -- "$@" "$arg" ;;
	esac
done
exec "$nvcc" "$@"
