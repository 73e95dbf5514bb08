# The image `publisher watch` runs in on AWS (templates/aws-stack.yaml, WatchImage): the package
# installed as a wheel with the hash-locked runtime set, as the scheduled publish installs it.
# The devnet (devnet/, its own distribution) stays out: .dockerignore admits only the runtime package.
#   docker build -t publisher .   then push it where the stack can pull it (e.g. ECR).
FROM python:3.11-slim AS wheel
WORKDIR /src
COPY requirements/ requirements/
RUN python -m pip install --quiet --no-cache-dir --require-hashes -r requirements/runtime.txt
COPY pyproject.toml README.md ./
COPY publisher/ publisher/
RUN python -m pip wheel --quiet --no-deps --no-build-isolation -w /dist .

FROM python:3.11-slim
COPY requirements/runtime.txt /tmp/runtime.txt
RUN python -m pip install --quiet --no-cache-dir --require-hashes -r /tmp/runtime.txt && rm /tmp/runtime.txt
COPY --from=wheel /dist/ /tmp/dist/
RUN python -m pip install --quiet --no-cache-dir --no-deps /tmp/dist/*.whl && rm -rf /tmp/dist
# Unprivileged; /data holds the built trees between turns (the task's ephemeral storage).
RUN useradd --system --create-home --home-dir /data publisher
USER publisher
WORKDIR /data
ENTRYPOINT ["publisher"]
CMD ["--help"]
