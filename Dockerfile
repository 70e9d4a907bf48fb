# SpeakerHub in a container (see docs/running-as-a-service.md, "Docker"; untested here: no container engine).
FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
# espeak-ng: offline text-to-speech; ffmpeg: the Snapcast driver decodes with it.
RUN apt-get update \
  && apt-get install -y --no-install-recommends espeak-ng ffmpeg \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/samples ./samples
ENV SPEAKERHUB_DATA_DIR=/data \
    SPEAKERHUB_SERVER_HOST=0.0.0.0 \
    SPEAKERHUB_LOG_FORMAT=json
RUN mkdir -p /data && chown node:node /data
VOLUME /data
EXPOSE 8090
USER node
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["hub"]
