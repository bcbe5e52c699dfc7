# roz server image. Node 24 LTS; the server runs from TypeScript sources (type stripping).
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production ROZ_HOST=0.0.0.0 ROZ_PORT=8080 ROZ_DATA_DIR=/data
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY src ./src
COPY routes ./routes
COPY proto ./proto
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "src/main.ts"]
