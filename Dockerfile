# roz server image. The Node version is the `node` dev dependency's (package.json), so the
# image runs what the tests ran; the server runs from TypeScript sources (type stripping).
# The web console is built with the dev dependencies (esbuild, Preact) in a stage of its own.
FROM node:24.21.0-bookworm-slim AS console
WORKDIR /app
COPY package.json package-lock.json ./
# The workspace's manifest comes before `npm ci`, which links @roz/client (the console's client library).
COPY packages/client/package.json ./packages/client/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY web ./web
COPY packages/client/src ./packages/client/src
RUN node web/build.ts

FROM node:24.21.0-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production ROZ_HOST=0.0.0.0 ROZ_PORT=8080 ROZ_DATA_DIR=/data
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/
# No scripts: the root `prepare` builds the console, which the stage above did (web/ is not here).
# npm's cache and logs go with the layer that made them.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && rm -rf /root/.npm /tmp/*
COPY src ./src
COPY routes ./routes
COPY proto ./proto
# `roz chat` talks to a server through @roz/client.
COPY packages/client/src ./packages/client/src
COPY --from=console /app/web/dist ./web/dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
# `roz healthcheck` probes /healthz on ROZ_PORT, over TLS when ROZ_TLS_CERT is set (no curl needed).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["node", "src/main.ts", "healthcheck"]
# The command is `roz`: `docker run IMAGE keys create --tenant acme` runs a sub-command.
# Node's flags are those of `npm start` (V8's young generation at most 8 MB: see docs/resilience.md).
ENTRYPOINT ["node", "--max-semi-space-size=4", "src/main.ts"]
CMD []
