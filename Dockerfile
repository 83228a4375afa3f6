# The gateway image (see docs/en/deploy.md). Build: docker build -t semproxy .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md constraints.txt ./
COPY src ./src
# constraints.txt pins every transitive dependency to the versions CI tested.
RUN pip install --constraint constraints.txt . \
 && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin semproxy
USER 10001

# 9080: the OpenAI-compatible API; 9180: admin API and /metrics.
EXPOSE 9080 9180
ENTRYPOINT ["semproxy"]
CMD ["serve", "--config", "/etc/semproxy/semproxy.yaml", "--listen", "0.0.0.0:9080"]
