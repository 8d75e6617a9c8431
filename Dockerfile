# One image for every component (the workspaces run their TypeScript with tsx); docker-compose.yml
# picks the component with its working directory and `node --import tsx <entry>`.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
COPY packages packages
COPY lexicons lexicons
COPY services services
COPY gateway gateway
COPY xrpc-adapter xrpc-adapter
COPY scripts scripts
RUN npm ci --no-audit --no-fund && npm cache clean --force
USER node
