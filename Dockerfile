# holdfast's image, the operator alone (cmd/holdfast-operator), for those with a Docker
# engine. Without one, `make image` builds the same image (a static binary on an empty
# base, non-root, its LICENSE, NOTICE and the licence texts of the modules holdfast links
# under /licenses) with hack/image, and `make release` the multi-platform one.
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse HEAD) --build-arg BUILD_DATE=... .
FROM golang:1.26 AS build
ARG VERSION=dev
ARG COMMIT=
ARG BUILD_DATE=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /holdfast \
	-ldflags "-s -w -X github.com/holdfast-dev/holdfast/internal/buildinfo.Version=${VERSION} -X github.com/holdfast-dev/holdfast/internal/buildinfo.Commit=${COMMIT} -X github.com/holdfast-dev/holdfast/internal/buildinfo.BuildDate=${BUILD_DATE}" \
	./cmd/holdfast-operator
RUN hack/licenses.sh /THIRD_PARTY_LICENSES

FROM scratch
COPY --from=build /holdfast /holdfast
COPY LICENSE NOTICE /licenses/
COPY --from=build /THIRD_PARTY_LICENSES /licenses/
USER 65532:65532
ENTRYPOINT ["/holdfast"]
