# matrixd in a container.
#
# CPU image (Debian 12 packages only):
#   docker build -t matrixd .
# GPU image: build FROM a Debian 12 image that carries the CUDA 13 toolkit at /usr/local/cuda
# (nvcc, cuBLAS, cuSOLVER, cuSPARSE); CMake then builds the CUDA backend (sm_90 by default,
# override with --build-arg CUDA_ARCHITECTURES=... for later GPUs: it needs 9.0 or later):
#   docker build --build-arg BASE_IMAGE=<your-cuda13-debian12-image> -t matrixd:cuda .
# Run on a GPU node with the NVIDIA container runtime (Kubernetes: deploy/kubernetes/).
ARG BASE_IMAGE=debian:12

FROM ${BASE_IMAGE} AS build
ARG CUDA_ARCHITECTURES=90
WORKDIR /src
COPY deploy/install-deps.sh deploy/install-deps.sh
RUN deploy/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES} \
 && cmake --build build -j"$(nproc)" --target matrixd matrixctl \
 && mkdir -p /out/bin /out/lib \
 && cp build/server/matrixd build/client/matrixctl /out/bin/ \
 && ldd build/server/matrixd build/client/matrixctl | awk '/=> \//{print $3}' | sort -u \
      | grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux|libcuda)\.' \
      | xargs -r cp -L -t /out/lib/

FROM ${BASE_IMAGE}
RUN useradd --system --uid 10001 --no-create-home matrixd
COPY --from=build /out/bin/ /usr/local/bin/
COPY --from=build /out/lib/ /usr/local/lib/matrixd/
ENV LD_LIBRARY_PATH=/usr/local/lib/matrixd
USER 10001
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=3s CMD ["matrixctl", "--server=127.0.0.1:50051", "--deadline=2s", "health"]
ENTRYPOINT ["matrixd"]
CMD ["--listen=0.0.0.0:50051", "--backend=auto"]
