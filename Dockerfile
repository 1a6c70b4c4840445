# fixloop: one executable in a small image. Build: docker build -t fixloop .
#
# Base images are pinned: the build stage to the Bun release the lockfile and bun-types were made with
# (1.4.5; bump it together with `bun upgrade`, bun.lock and install.sh's BUN_VERSION), the runtime to a Debian 12 point release.
# Pin by digest too in your own registry if you need bit-for-bit rebuilds (docker buildx imagetools inspect).
FROM oven/bun:1.4.5-debian AS build
WORKDIR /src
COPY package.json bun.lock bunfig.toml tsconfig.json ./
RUN bun install --frozen-lockfile
# Everything else the build reads (src, migrations, assets); .dockerignore keeps data, keys and builds out.
COPY . .
RUN bun run build

FROM debian:12.12-slim
# git: agent runs clone and push with it; ca-certificates: HTTPS git hosts and S3; bubblewrap: the agent
# sandbox (without a working one serve warns and starts, but refuses to start once an App has a repository
# connected, and agent runs fail with the reason). Docker's default seccomp profile blocks the user
# namespaces bubblewrap needs: run with --security-opt seccomp=unconfined (or a profile allowing unshare
# and clone with namespace flags), or set FIXLOOP_AGENT_SANDBOX=off if this instance runs no agents.
#
# Agent CLIs are NOT included (claude-code, codex, aider are large and each has its own licence and
# credentials). Add the one you use in a derived image, for example:
#   FROM fixloop
#   USER root
#   RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm \
#    && npm install -g @anthropic-ai/claude-code && rm -rf /var/lib/apt/lists/*
#   USER fixloop
# and pass its credentials with FIXLOOP_AGENT_ENV (docs/agents.md).
#
# The process runs as uid 10001 (user "fixloop"). The data volume must be writable by that uid: a named
# volume gets it from /data below; for a bind mount run `chown -R 10001:10001 /path/on/host` first (or
# `docker run --user $(id -u):$(id -g)` with a dir you own). The data dir holds master.key: keep it 0700.
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates bubblewrap && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /data --uid 10001 --user-group fixloop && mkdir -p /data && chown fixloop:fixloop /data && chmod 0700 /data
COPY --from=build /src/dist/fixloop /usr/local/bin/fixloop
USER fixloop
ENV FIXLOOP_HOST=0.0.0.0 FIXLOOP_PORT=8080 FIXLOOP_DATA_DIR=/data
VOLUME /data
EXPOSE 8080
# The check reads FIXLOOP_PORT: another port goes there (-e FIXLOOP_PORT=9000), not as serve --port.
HEALTHCHECK --interval=10s --timeout=3s CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${FIXLOOP_PORT} && printf 'GET /readyz HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/fixloop"]
CMD ["serve"]
