"""About the API itself: feature flags and the run stamp."""
from __future__ import annotations

import hashlib
from collections.abc import Mapping

from ..compute import rewards as R
from ..compute.params import no_distribution_reason
from . import schema as S
from .announcements import ANNOUNCEMENTS_SCHEMA, announcement_records
from .common import meta
from .context import Context
from .registry import endpoint

STATUS_PATH = "/status"
# Chain-derived flags: name -> what makes it true. Each is computed from the snapshot below; a flag
# the profile also names (liquidStaking, minipoolCreation, rewardsEstimator) is on only when the
# profile allows it and the chain does.
CHAIN_FLAGS = {
    "liquidStakingDeposits": "the profile's liquidStaking and TokenggAVAX not paused (ggAVAX deposits open; "
                             "withdrawals go through the withdrawal queue, see /withdrawals)",
    "minipoolCreation": "the profile allows it and MinipoolManager is not paused",
    "rewardsDistribution": "a GGP distribution to node operators is expected: RewardsPool not paused (startRewardsCycle "
                           "checks it) and the rewards cycle not overdue by more than a whole cycle (/rewards/params "
                           "distributionExpected)",
    "rewardsEstimator": "the profile allows it and a GGP distribution is expected (off, the estimator still answers, "
                        "with every GGP figure 0 and the reason)",
    "ggpStaking": "Staking not paused: GGP can be staked (withdrawGGP checks no pause)",
    "delegation": "ProtocolDAO WithdrawForDelegationEnabled",
}


def feature_flags(ctx: Context) -> dict[str, bool]:
    s, p = ctx.snap, ctx.snap.paused
    flags = dict(ctx.flags)
    expected = no_distribution_reason(s) is None
    flags["liquidStakingDeposits"] = flags.get("liquidStaking", True) and not p.get("TokenggAVAX", False)
    flags["minipoolCreation"] = flags.get("minipoolCreation", True) and not p.get("MinipoolManager", False)
    flags["rewardsDistribution"] = expected
    flags["rewardsEstimator"] = flags.get("rewardsEstimator", True) and expected
    flags["ggpStaking"] = not p.get("Staking", False)
    flags["delegation"] = s.settings.withdraw_for_delegation_enabled
    return flags


@endpoint(
    "/featureFlags", tag="About", summary="Feature flags for this environment",
    description="The profile's flags merged with flags derived from the chain at the build block: "
                + "; ".join(f"`{k}`: {v}" for k, v in CHAIN_FLAGS.items())
                + ". `paused` lists the protocol's paused flags as read from Storage.",
    schema=S.obj({
        "environment": S.described(S.STRING, "network this build is for (mainnet, fuji, devnet)"),
        "flags": {"type": "object", "additionalProperties": S.BOOLEAN,
                  "description": "flag name -> on (true) or off; read by front ends to show or hide features"},
        "paused": {"type": "object", "additionalProperties": S.BOOLEAN,
                   "description": "contract name -> paused (true) as recorded in the protocol's Storage"},
        "meta": S.META,
    }),
)
def flags(ctx: Context):
    yield "/featureFlags", {"environment": ctx.snap.network, "flags": ctx.cached(feature_flags),
                            "paused": dict(ctx.snap.paused), "meta": meta(ctx)}


NOT_FOUND = R.error_body("not_found", "no such resource")


@endpoint(
    "/errors/404", tag="About", summary="Not found", cache="docs", documented=False,
    description="The JSON body the CDN answers, with status 404, for a path that names no published file.",
    schema=S.obj({"error": S.obj({
        "code": {"const": "not_found", "description": "machine-readable error code"},
        "message": S.described(S.STRING, "what went wrong, in words"),
    }, description="the error")}),
)
def not_found(ctx: Context):
    yield "/errors/404", NOT_FOUND


def files_digest(files: Mapping[str, tuple]) -> str:
    """The sha256 of a line ``<path> <sha256>`` per file, in path order; hashed in pieces: at
    250 000 files the whole text would be 25 MB held at a build's peak."""
    digest = hashlib.sha256()
    paths = sorted(files)
    for i in range(0, len(paths), 4096):
        digest.update("".join([f"{path} {files[path][0]}\n" for path in paths[i:i + 4096]]).encode())
    return digest.hexdigest()


@endpoint(
    STATUS_PATH, tag="About", summary="Run stamp",
    description="When and from which block this data was built, which version built it, when the next "
                "update is due, the dates the protocol's operator announced (`announcements`, which no contract "
                "holds, with the days left at the block), and a digest of every other published file. Published "
                "last, so it always "
                "describes complete data. It is the freshness authority: an aggregate whose content did not "
                "change since an earlier run keeps that run's bytes, so its `meta.block` is the block its "
                "content was last read at (it is the same at this block), while `block` here is the block "
                "of this run.",
    cache="status", final=True,
    schema=S.obj({
        "network": S.described(S.STRING, "network name: mainnet, fuji or devnet"),
        "chainId": S.described(S.INTEGER, "EVM chain id"),
        "block": S.BLOCK,
        "generatedAt": S.described(S.TIMESTAMP, "when this build ran, unix seconds"),
        "version": S.described(S.STRING, "version of the publisher that built the data"),
        "cadenceSeconds": S.described(S.INTEGER, "seconds between scheduled builds"),
        "nextUpdateBy": S.described(S.TIMESTAMP, "when the next build is due, unix seconds (generatedAt + cadenceSeconds)"),
        "files": S.obj({
            "count": S.described(S.INTEGER, "number of published files besides this one"),
            "bytes": S.described(S.INTEGER, "their total size in bytes"),
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$",
                       "description": "sha256 over the sorted lines \"<path> <sha256 of the file>\""},
        }, description="digest of every other published file"),
        "warnings": S.described(S.array(S.STRING), "problems the build met that did not stop it (e.g. a validator the provider does not list)"),
        "announcements": ANNOUNCEMENTS_SCHEMA,
        "meta": S.META,
    }),
)
def status(ctx: Context, files: Mapping[str, tuple]):
    """``files``: every other file of the run, URL path -> (sha256, size, …) (a record's entries).
    The build calls this last, with the digests of what it wrote, so /status reads no shared state."""
    s = ctx.snap
    yield "/status", {
        "network": s.network, "chainId": s.chain_id,
        "block": {"number": s.block.number, "hash": s.block.hash, "timestamp": s.block.timestamp},
        "generatedAt": ctx.generated_at, "version": ctx.version, "cadenceSeconds": ctx.cadence_seconds,
        "nextUpdateBy": ctx.generated_at + ctx.cadence_seconds,
        "files": {"count": len(files), "bytes": sum(f[1] for f in files.values()), "sha256": files_digest(files)},
        "warnings": list(s.warnings), "meta": meta(ctx),
        "announcements": announcement_records(ctx.announcements, s.block.timestamp),
    }
