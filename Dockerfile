# fixloop: one executable in a small image. Build: docker build -t fixloop .
FROM oven/bun:1 AS build
WORKDIR /src
COPY package.json bun.lock bunfig.toml tsconfig.json ./
RUN bun install --frozen-lockfile
COPY src ./src
COPY migrations ./migrations
RUN bun run build

FROM debian:bookworm-slim
# git is what agent runs clone and push with; ca-certificates for HTTPS git hosts and S3.
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /data --uid 10001 fixloop && mkdir -p /data && chown fixloop /data
COPY --from=build /src/dist/fixloop /usr/local/bin/fixloop
USER fixloop
ENV FIXLOOP_HOST=0.0.0.0 FIXLOOP_PORT=8080 FIXLOOP_DATA_DIR=/data
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${FIXLOOP_PORT} && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/fixloop"]
CMD ["serve"]
