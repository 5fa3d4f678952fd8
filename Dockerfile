# hookgate runs its TypeScript directly on Node.js 24 (type stripping): no build step.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; the embedded PostgreSQL is for trying hookgate out and is
# not used in containers (DATABASE_URL is required there).
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY services ./services
COPY migrations ./migrations
USER node
EXPOSE 8080 9464
ENTRYPOINT ["node", "services/cli/main.ts"]
CMD ["serve", "--role", "all", "--config", "/etc/hookgate/hookgate.yaml"]
