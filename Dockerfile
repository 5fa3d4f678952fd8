# syntax=docker/dockerfile:1
# hookgate runs its TypeScript directly on Node.js 24 (type stripping): no build step.
# One image for every role; the chart passes `serve --role gateway|worker`, `migrate`, `send-test`.
# docs/kubernetes.md ("The image") says what each stage does and why the last one starts empty.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only. Optional ones are left out too: the embedded PostgreSQL binaries
# are for trying hookgate out, and DATABASE_URL is always set in a container (the chart requires it),
# so embedded-postgres is never loaded. npm's cache is a cache mount, never part of a layer.
# Behind a TLS-intercepting proxy or a private registry, pass a CA bundle and/or an npmrc as build
# secrets (`--secret id=ca,src=ca.pem`, `--secret id=npmrc,src=.npmrc`): they are mounted for this
# one step and stay in no layer. Then what Node.js never loads from node_modules goes: type
# declarations, TypeScript sources (type stripping refuses them there), source maps and
# documentation (licence files stay).
RUN --mount=type=cache,target=/root/.npm \
    --mount=type=secret,id=npmrc,target=/root/.npmrc \
    --mount=type=secret,id=ca,target=/run/secrets/ca \
    if [ -s /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi; \
    npm ci --omit=dev --omit=optional --no-audit --no-fund \
    && find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' \
         -o -iname 'readme*' -o -iname 'changelog*' -o -iname 'history.md' \) -delete

# Node.js and the shared libraries it links, and nothing else: no shell, no package manager,
# no npm. ldd names the libraries for whatever architecture the base is.
FROM node:24-bookworm-slim AS runtime
RUN mkdir -p /runtime/tmp /runtime/app/.compile-cache && chmod 1777 /runtime/tmp \
    && chown 10001:10001 /runtime/app/.compile-cache \
    && cp --parents -L /usr/local/bin/node /etc/ld.so.cache \
         $(ldd /usr/local/bin/node | grep -o '/[^ ]*') /runtime/

FROM scratch
COPY --from=runtime /runtime/ /
ENV PATH=/usr/local/bin NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY services ./services
COPY migrations ./migrations
# A numeric user (the chart's runAsUser) with no home and no shell login; the files above stay
# root-owned and read-only to it. hookgate writes nothing outside /tmp (an emptyDir in the chart),
# so the root filesystem can be read-only.
USER 10001:10001
# Node.js's compile cache, made now as that user (Node.js keys it by user id) and read-only in the
# pods: every module type-stripped and compiled once here instead of at each start.
ENV NODE_COMPILE_CACHE=/app/.compile-cache
RUN ["node", "services/cli/compile-cache.ts"]
# 8080: webhooks (LISTEN_ADDRESS, 0.0.0.0 with DATABASE_URL). 9464: /metrics and the worker's
# probes, on loopback unless METRICS_LISTEN_ADDRESS says otherwise (the chart sets 0.0.0.0).
EXPOSE 8080 8081 9464
# node is PID 1 and receives SIGTERM directly: hookgate handles it (drain, then exit 0) and starts
# no child processes, so no init is needed to reap them.
ENTRYPOINT ["node", "services/cli/main.ts"]
CMD ["serve", "--role", "all", "--config", "/etc/hookgate/hookgate.yaml"]
