# holdfast's image for those with a Docker engine. Without one, `make image` builds the
# same image (a static binary on an empty base, non-root) with hack/image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /holdfast ./cmd/holdfast

FROM scratch
COPY --from=build /holdfast /holdfast
USER 65532:65532
ENTRYPOINT ["/holdfast"]
