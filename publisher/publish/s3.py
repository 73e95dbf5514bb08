"""The S3 (any S3-compatible server) and CloudFront sink. Credentials come from boto3's usual chain
(environment, AWS config, instance or OIDC role) and never pass through this code."""
from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from ..errors import PublisherError
from ..transport import mask_url
from .plan import Item

MISSING = {"NoSuchKey", "404", "NotFound"}
DELETE_BATCH = 1000  # DeleteObjects limit
# The most a run reads of one object (/status, the manifest, the objects the change bounds compare,
# the live price history): /stakers at 100 000 stakers is some 40 MB. A larger object is refused by
# the length its server announces, before its body is read, or else once one byte more than the
# bound has come: what the bucket holds cannot exhaust this process's memory.
MAX_READ_BYTES = 256 << 20


class S3Sink:
    def __init__(self, bucket: str, *, endpoint_url: str | None = None, region: str | None = None,
                 session: boto3.Session | None = None, workers: int = 16, max_read_bytes: int = MAX_READ_BYTES):
        self.bucket = bucket
        self.max_read_bytes = max_read_bytes
        self.endpoint_url = endpoint_url
        session = session or boto3.Session()
        # Standard retry mode (backoff with jitter on throttling and 5xx); attempts follow the AWS
        # configuration (AWS_MAX_ATTEMPTS), 3 by default. Objects are at most a few MB: 5 s to
        # connect and 20 s per read bound each attempt; the run deadline bounds the whole publish.
        config = Config(retries={"mode": "standard"}, max_pool_connections=workers,
                        connect_timeout=5, read_timeout=20)
        # Signing needs a region even against a local S3-compatible server.
        region = region or session.region_name or "us-east-1"
        try:
            self.s3 = session.client("s3", endpoint_url=endpoint_url, region_name=region, config=config)
        except (BotoCoreError, ValueError) as exc:
            raise PublisherError(f"s3://{bucket}: cannot create the client: {self._reason(exc)}") from None
        self._session, self._config = session, config
        self._cloudfront = None  # made when a run first invalidates: most runs do not
        # What a run costs: requests by HTTP method (retries included), "bytes sent" and "bytes received".
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.s3.meta.events.register("before-send.s3", self._count)

    def _count(self, request=None, **_):
        self._add(getattr(request, "method", "?"))

    def _add(self, what: str, n: int = 1) -> None:
        with self._lock:
            self.requests[what] += n

    def where(self, prefix: str) -> str:
        return f"s3://{self.bucket}/{prefix}"

    def _reason(self, exc: Exception) -> str:
        if isinstance(exc, EndpointConnectionError):
            # Its message carries the full URL, which may include a path or query we do not print.
            return f"cannot connect to {mask_url(self.endpoint_url or 'https://s3.amazonaws.com')}"
        if isinstance(exc, ClientError):
            err = exc.response.get("Error", {})
            code = err.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
            return f"{code}: {err.get('Message') or 'no message'}"
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    @contextmanager
    def _errors(self, action: str, key: str):
        try:
            yield
        except (BotoCoreError, ClientError) as exc:
            raise PublisherError(f"s3://{self.bucket}/{key}: {action} failed: {self._reason(exc)}") from None

    def get(self, key: str) -> bytes | None:
        limit = self.max_read_bytes
        with self._errors("read", key):
            try:
                got = self.s3.get_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in MISSING:
                    return None
                raise
            stream, size = got["Body"], got.get("ContentLength")
            body: bytes | None = None
            try:
                # The announced length first, then what actually comes: a server may say nothing.
                if not (isinstance(size, int) and size > limit):
                    body = stream.read(limit + 1)
                    if len(body) <= limit:
                        body += stream.read()  # nothing more: the stream checks the length announced
            finally:
                stream.close()
        self._add("bytes received", len(body or b""))
        if body is None or len(body) > limit:
            raise PublisherError(f"s3://{self.bucket}/{key}: larger than the {limit} bytes a run reads of one object")
        return body

    def listing(self, prefix: str) -> dict[str, tuple[int, str]]:
        """Every key under the prefix with its size and ETag."""
        out = {}
        with self._errors("list", prefix):
            for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
                for obj in page.get("Contents", ()):
                    out[obj["Key"]] = (obj["Size"], obj.get("ETag", ""))
        return out

    def put(self, item: Item, body: bytes) -> None:
        self.put_bytes(item.key, body, item.content_type, item.cache_control, item.sha256)

    def put_bytes(self, key: str, body: bytes, content_type: str, cache_control: str, sha256: str) -> None:
        self._add("bytes sent", len(body))
        with self._errors("upload", key):
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type,
                               CacheControl=cache_control, Metadata={"sha256": sha256})

    def delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start:start + DELETE_BATCH]
            with self._errors("delete", batch[0]):
                resp = self.s3.delete_objects(Bucket=self.bucket, Delete={
                    "Objects": [{"Key": k} for k in batch], "Quiet": True})
            if resp.get("Errors"):
                err = resp["Errors"][0]
                raise PublisherError(f"s3://{self.bucket}/{err.get('Key')}: delete failed: "
                                     f"{err.get('Code')}: {err.get('Message') or 'no message'}")

    def invalidate(self, distribution_id: str, paths: list[str], reference: str) -> str:
        """One invalidation request for all paths. A rerun with the same reference and paths is
        answered with the existing invalidation instead of creating (and paying for) another."""
        try:
            if self._cloudfront is None:
                # CloudFront is global; moto and other emulators serve it at the same endpoint.
                self._cloudfront = self._session.client("cloudfront", endpoint_url=self.endpoint_url,
                                                        region_name="us-east-1", config=self._config)
            cloudfront: Any = self._cloudfront
            resp = cloudfront.create_invalidation(DistributionId=distribution_id, InvalidationBatch={
                "Paths": {"Quantity": len(paths), "Items": paths}, "CallerReference": reference})
        except (BotoCoreError, ClientError, ValueError) as exc:
            raise PublisherError(f"CloudFront distribution {distribution_id}: invalidation failed: "
                                 f"{self._reason(exc)}") from None
        return resp["Invalidation"]["Id"]
