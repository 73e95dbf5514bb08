// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Storage} from "./Storage.sol";
import {TokenggAVAX} from "./TokenggAVAX.sol";
import {WAVAX} from "./WAVAX.sol";

/// @title The ggAVAX (stAVAX) withdrawal queue: mainnet's read interface and its 2026 life cycle
/// @notice A holder files a request (shares held here), the depositor serves the line strictly in
///         order from the vault's liquidity (shares burnt, AVAX set aside), the requester claims
///         before the request expires, or cancels; anyone may reclaim an expired request.
/// @dev The one devnet difference: AVAX moves as WAVAX. ggAVAX pays redemptions in WAVAX, so the
///      queue holds the AVAX it allocates as WAVAX and pays WAVAX on claim; re-deposits and the
///      surplus returned as yield go back to the vault as WAVAX. The bookkeeping is mainnet's:
///      totalAllocatedFunds = Σ allocatedFunds of fulfilled requests (= the queue's WAVAX balance),
///      and the queue's ggAVAX balance = Σ shares of pending requests.
///      Devnet-only: seedRequests (the admin files many requests at explicit past times, with the
///      same checks and effects as requestUnstakeOnBehalfOf) so large scenarios seed in a few blocks.
contract WithdrawQueue {
	struct UnstakeRequest {
		address requester;
		uint256 shares;
		uint256 expectedAssets;
		uint48 requestTime;
		uint48 claimableTime;
		uint48 expirationTime;
		uint256 allocatedFunds;
	}

	/// @dev One request of seedRequests: filed for `requester` at `requestTime` (in the past).
	struct SeedRequest {
		address requester;
		uint256 shares;
		uint48 requestTime;
		uint48 expirationDelay;
	}

	/// @dev Ids with O(1) membership; removal moves the last id into the hole, so the order of
	///      `ids` is arbitrary, as with mainnet's EnumerableSet.
	struct IdSet {
		uint256[] ids;
		mapping(uint256 => uint256) position; // index + 1; 0 = not a member
	}

	error DirectAVAXDepositsNotSupported();
	error InsufficientAVAXBalance();
	error InsufficientTokenBalance();
	error NotYourRequest();
	error NoFundsAllocated();
	error RequestNotFulfilled();
	error RequestNotFound();
	error RequestExpired();
	error RequestNotExpired();
	error RequestNotPending();
	error RequestNotFulfilledOrPending();
	error TooLateToCancelRequest();
	error ZeroShares();
	error InvalidRedemptionAmount();
	error InvalidYieldAmounts();
	error MinimumSharesNotMet();
	error InvalidExpirationDelay();
	error ContractPausedError();
	error InvalidRequestTime();
	error AccessControlUnauthorizedAccount(address account, bytes32 neededRole);

	event UnstakeRequested(uint256 indexed requestId, address indexed requester, uint256 shares, uint256 expectedAssets, uint48 claimableTime);
	event RequestFulfilled(bytes32 indexed source, uint256 indexed requestId, uint256 assets);
	event StakeDeposited(bytes32 indexed source, address indexed depositor, uint256 amount);
	event UnstakeClaimed(uint256 indexed requestId, address indexed claimer, uint256 amount);
	event ExpiredFundsReclaimed(uint256 indexed requestId, uint256 amount);
	event ExpiredSharesReturned(uint256 indexed requestId, address indexed requester, uint256 shares);
	event RequestCancelled(uint256 indexed requestId, address indexed requester, uint256 shares);
	event ExcessSharesBurnt(uint256 indexed requestId, uint256 sharesBurnt);
	event BatchExpiredFundsReclaimed(address indexed requester, uint256 totalAmount, uint256 requestsProcessed);
	event QueueCleaned(bytes32 indexed reason, uint256 indexed requestId);
	event ContractInitialized(address indexed tokenggAVAX, uint48 unstakeDelay, uint48 expirationDelay);
	event InsufficientLiquidity(uint256 availableAssets, uint256 requiredAssets);
	event PendingRequestsNotProcesses(uint256 pendingRequests);
	event ContractPaused(address indexed pauser);
	event ContractUnpaused(address indexed unpauser);
	event DepositedFromStaking(uint256 baseAmt, uint256 rewardAmt, bytes32 source, uint256 value);
	event YieldDeposited(uint256 value);
	event RoleGranted(bytes32 indexed role, address indexed account, address indexed sender);
	event RoleRevoked(bytes32 indexed role, address indexed account, address indexed sender);

	bytes32 public constant DEFAULT_ADMIN_ROLE = 0x00;
	bytes32 public constant DEPOSITOR_ROLE = keccak256("DEPOSITOR_ROLE");
	bytes32 public constant PAUSER_ROLE = keccak256("PAUSER_ROLE");
	uint48 public constant MIN_EXPIRATION_DELAY = 3 days;
	bytes32 private constant YIELD_SOURCE = "WITHDRAW_QUEUE";

	TokenggAVAX public immutable tokenggAVAX;
	/// @dev Kept for the mainnet getter; the logic never reads it (as on mainnet).
	Storage public immutable store;
	WAVAX private immutable wavax;

	uint256 public nextRequestId;
	uint256 public totalAllocatedFunds;
	mapping(uint256 => UnstakeRequest) public requests;
	uint48 public unstakeDelay;
	uint48 public maxExpirationDelay;
	bool public paused;
	uint48 private lastRequestTime;
	uint256 private maxRequestsPerStakingDeposit;
	uint256 private minUnstakeOnBehalfOfAmt;

	IdSet private pendingSet;
	IdSet private fulfilledSet;
	mapping(address => IdSet) private byOwner;
	// The FIFO line: ids in request order; served and stale entries leave from the front only.
	mapping(uint256 => uint256) private line;
	uint256 private lineFront;
	uint256 private lineBack;

	mapping(bytes32 => mapping(address => bool)) private roles;

	modifier onlyRole(bytes32 role) {
		if (!roles[role][msg.sender]) revert AccessControlUnauthorizedAccount(msg.sender, role);
		_;
	}

	/// @dev Pause blocks new requests only.
	modifier whenNotPaused() {
		if (paused) revert ContractPausedError();
		_;
	}

	constructor(TokenggAVAX tokenggAVAX_, WAVAX wavax_, Storage store_, uint48 unstakeDelay_, uint48 maxExpirationDelay_) {
		if (maxExpirationDelay_ < MIN_EXPIRATION_DELAY) revert InvalidExpirationDelay();
		tokenggAVAX = tokenggAVAX_;
		wavax = wavax_;
		store = store_;
		unstakeDelay = unstakeDelay_;
		maxExpirationDelay = maxExpirationDelay_;
		maxRequestsPerStakingDeposit = 50;
		minUnstakeOnBehalfOfAmt = 0.01 ether;
		_grant(DEFAULT_ADMIN_ROLE, msg.sender);
		emit ContractInitialized(address(tokenggAVAX_), unstakeDelay_, maxExpirationDelay_);
	}

	/// @dev As mainnet: AVAX only from the vault or WAVAX (the devnet sends none).
	receive() external payable {
		if (msg.sender != address(tokenggAVAX) && msg.sender != address(wavax)) revert DirectAVAXDepositsNotSupported();
	}

	// ---- requests ----

	function requestUnstake(uint256 shares, uint48 expirationDelay) external whenNotPaused returns (uint256 requestId) {
		if (tokenggAVAX.balanceOf(msg.sender) < shares) revert InsufficientTokenBalance();
		requestId = _file(msg.sender, shares, expirationDelay, uint48(block.timestamp));
		tokenggAVAX.transferFrom(msg.sender, address(this), shares);
	}

	/// @notice The caller provides the shares; `requester` owns the request (pstAVAX files these).
	function requestUnstakeOnBehalfOf(uint256 shares, address requester, uint48 expirationDelay) external whenNotPaused returns (uint256 requestId) {
		if (shares < minUnstakeOnBehalfOfAmt) revert MinimumSharesNotMet();
		if (tokenggAVAX.balanceOf(msg.sender) < shares) revert InsufficientTokenBalance();
		requestId = _file(requester, shares, expirationDelay, uint48(block.timestamp));
		tokenggAVAX.transferFrom(msg.sender, address(this), shares);
	}

	/// @notice Devnet seeding: requests filed on behalf of their requesters at explicit times, no
	///         later than now and in time order (so the line stays in request order). Each runs the
	///         checks and effects of requestUnstakeOnBehalfOf with its own time in place of now;
	///         expectedAssets is priced at today's rate. The caller's shares move in one transfer.
	function seedRequests(SeedRequest[] calldata items) external onlyRole(DEFAULT_ADMIN_ROLE) whenNotPaused returns (uint256 firstId) {
		firstId = nextRequestId;
		uint256 total;
		for (uint256 i = 0; i < items.length; ++i) {
			SeedRequest calldata item = items[i];
			if (item.shares < minUnstakeOnBehalfOfAmt) revert MinimumSharesNotMet();
			if (item.requestTime > block.timestamp || item.requestTime < lastRequestTime) revert InvalidRequestTime();
			_file(item.requester, item.shares, item.expirationDelay, item.requestTime);
			total += item.shares;
		}
		if (tokenggAVAX.balanceOf(msg.sender) < total) revert InsufficientTokenBalance();
		tokenggAVAX.transferFrom(msg.sender, address(this), total);
	}

	// ---- claim, cancel, reclaim ----

	/// @notice The requester takes the allocated AVAX (WAVAX on the devnet) any time before expiry.
	function claimUnstake(uint256 requestId) external {
		UnstakeRequest storage r = requests[requestId];
		if (r.requester == address(0)) revert RequestNotFound();
		if (r.requester != msg.sender) revert NotYourRequest();
		if (!_has(fulfilledSet, requestId)) revert RequestNotFulfilled();
		if (block.timestamp >= r.expirationTime) revert RequestExpired();
		uint256 amount = r.allocatedFunds;
		if (amount == 0) revert NoFundsAllocated();
		if (wavax.balanceOf(address(this)) < amount) revert InsufficientAVAXBalance();
		totalAllocatedFunds -= amount;
		_remove(fulfilledSet, requestId);
		_close(requestId, msg.sender);
		emit UnstakeClaimed(requestId, msg.sender, amount);
		wavax.transfer(msg.sender, amount);
	}

	/// @notice Pending: shares worth expectedAssets at today's rate come back and the rest is burnt
	///         as yield for all holders. Fulfilled: only before claimableTime; the allocated AVAX is
	///         deposited again and the fresh shares go to the requester.
	function cancelRequest(uint256 requestId) public {
		UnstakeRequest storage r = requests[requestId];
		address requester = r.requester;
		if (requester == address(0)) revert RequestNotFound();
		if (requester != msg.sender) revert NotYourRequest();
		uint256 back;
		if (_has(pendingSet, requestId)) {
			uint256 original = r.shares;
			back = tokenggAVAX.convertToShares(r.expectedAssets);
			// The rate never falls on the devnet; should it, the request gets its own shares, no more.
			if (back > original) back = original;
			_remove(pendingSet, requestId);
			_close(requestId, requester);
			if (original > back) {
				tokenggAVAX.donateYield(original - back, YIELD_SOURCE);
				emit ExcessSharesBurnt(requestId, original - back);
			}
		} else if (_has(fulfilledSet, requestId)) {
			if (block.timestamp >= r.claimableTime) revert TooLateToCancelRequest();
			uint256 amount = r.allocatedFunds;
			totalAllocatedFunds -= amount;
			_remove(fulfilledSet, requestId);
			_close(requestId, requester);
			back = _redeposit(amount);
		} else {
			revert RequestNotPending();
		}
		emit RequestCancelled(requestId, requester, back);
		tokenggAVAX.transfer(requester, back);
	}

	/// @notice Cancel up to `maxRequests` of the caller's open requests (0 = all); all or nothing.
	function cancelRequests(uint256 maxRequests) external returns (uint256 cancelledCount) {
		uint256[] memory ids = byOwner[msg.sender].ids;
		if (maxRequests == 0) maxRequests = ids.length;
		for (uint256 i = 0; i < ids.length && cancelledCount < maxRequests; ++i) {
			cancelRequest(ids[i]);
			++cancelledCount;
		}
	}

	/// @notice Anyone, at or after expirationTime. Fulfilled: the AVAX is deposited again and the
	///         shares go to the requester. Pending: the original shares go back (nothing burnt).
	function reclaimExpiredRequest(uint256 requestId) public returns (uint256 reclaimedAmount) {
		UnstakeRequest storage r = requests[requestId];
		address requester = r.requester;
		uint256 back;
		if (_has(fulfilledSet, requestId)) {
			if (block.timestamp < r.expirationTime) revert RequestNotExpired();
			reclaimedAmount = r.allocatedFunds;
			if (reclaimedAmount == 0) revert NoFundsAllocated();
			if (wavax.balanceOf(address(this)) < reclaimedAmount) revert InsufficientAVAXBalance();
			totalAllocatedFunds -= reclaimedAmount;
			_remove(fulfilledSet, requestId);
			_close(requestId, requester);
			emit ExpiredFundsReclaimed(requestId, reclaimedAmount);
			back = _redeposit(reclaimedAmount);
		} else if (_has(pendingSet, requestId)) {
			if (block.timestamp < r.expirationTime) revert RequestNotExpired();
			back = r.shares;
			reclaimedAmount = r.expectedAssets;
			_remove(pendingSet, requestId);
			_close(requestId, requester);
			emit ExpiredFundsReclaimed(requestId, reclaimedAmount);
		} else {
			if (requestId >= nextRequestId) revert RequestNotFound();
			revert RequestNotFulfilledOrPending();
		}
		emit ExpiredSharesReturned(requestId, requester, back);
		tokenggAVAX.transfer(requester, back);
	}

	/// @notice Reclaim every expired request, fulfilled ones first (0 = no limit).
	function reclaimExpiredFunds(uint256 maxRequests) external returns (uint256 reclaimedAmount, uint256 processedCount) {
		if (maxRequests == 0) maxRequests = fulfilledSet.ids.length + pendingSet.ids.length;
		IdSet storage set = fulfilledSet;
		for (uint256 pass = 0; pass < 2; ++pass) {
			uint256 i = 0;
			while (i < set.ids.length && processedCount < maxRequests) {
				uint256 id = set.ids[i];
				if (block.timestamp >= requests[id].expirationTime) {
					reclaimedAmount += reclaimExpiredRequest(id); // moves another id into slot i
					++processedCount;
				} else {
					++i;
				}
			}
			set = pendingSet;
		}
		if (processedCount > 0) emit BatchExpiredFundsReclaimed(msg.sender, reclaimedAmount, processedCount);
	}

	// ---- fulfilment ----

	/// @notice The depositor serves the line: AVAX sent along goes into the vault first; then, from
	///         the front and at most getMaxRequestsPerStakingDeposit() steps (stale entries count),
	///         each request the vault's liquidity covers has its shares redeemed at today's rate and
	///         its expectedAssets set aside. It stops at the first request liquidity does not cover;
	///         what a redemption brings beyond expectedAssets goes back to the vault as yield.
	function depositFromStaking(uint256 baseAmt, uint256 rewardAmt, bytes32 source) external payable onlyRole(DEPOSITOR_ROLE) {
		if (baseAmt + rewardAmt != msg.value) revert InvalidYieldAmounts();
		if (msg.value > 0) {
			emit DepositedFromStaking(baseAmt, rewardAmt, source, msg.value);
			tokenggAVAX.depositFromStaking{value: msg.value}(baseAmt, rewardAmt, source);
			emit StakeDeposited(source, msg.sender, msg.value);
		}
		uint256 liquid = _vaultLiquidity();
		uint256 surplus;
		for (uint256 steps = 0; steps < maxRequestsPerStakingDeposit && pendingSet.ids.length > 0; ++steps) {
			uint256 id = line[lineFront];
			if (!_has(pendingSet, id)) {
				_popFront();
				emit QueueCleaned("REQUEST_NOT_IN_PENDING_SET", id);
				continue;
			}
			UnstakeRequest storage r = requests[id];
			uint256 expected = r.expectedAssets;
			if (liquid < expected) {
				emit InsufficientLiquidity(liquid, expected);
				break;
			}
			uint256 paid;
			try tokenggAVAX.redeemAVAX(r.shares) returns (uint256 assets) {
				paid = assets;
			} catch (bytes memory reason) {
				if (reason.length >= 4 && bytes4(reason) == TokenggAVAX.InsufficientLiquidity.selector) break;
				assembly {
					revert(add(reason, 32), mload(reason))
				}
			}
			if (paid < expected) revert InvalidRedemptionAmount();
			r.allocatedFunds = expected;
			totalAllocatedFunds += expected;
			_remove(pendingSet, id);
			_popFront();
			_add(fulfilledSet, id);
			emit RequestFulfilled(source, id, expected);
			// Checked, as on mainnet: a redemption worth more than the liquidity left reverts the whole call.
			liquid -= paid;
			surplus += paid - expected;
		}
		if (surplus > 0) {
			emit YieldDeposited(surplus);
			wavax.approve(address(tokenggAVAX), surplus);
			tokenggAVAX.depositYieldWAVAX(surplus, YIELD_SOURCE);
		}
		if (pendingSet.ids.length != 0) emit PendingRequestsNotProcesses(pendingSet.ids.length);
	}

	/// @notice Not a view, as on mainnet: a stale front entry is dropped (and 0 returned).
	function getNextPendingRequestAmount() external returns (uint256) {
		if (pendingSet.ids.length == 0) return 0;
		uint256 id = line[lineFront];
		if (!_has(pendingSet, id)) {
			_popFront();
			emit QueueCleaned("REQUEST_NOT_IN_PENDING_SET_QUERY", id);
			return 0;
		}
		return requests[id].expectedAssets;
	}

	// ---- views ----

	function getRequestInfo(uint256 requestId) external view returns (UnstakeRequest memory) {
		return requests[requestId];
	}

	/// @notice Fulfilled and not expired; claimableTime plays no part since the 2025-10 logic.
	function canClaimRequest(uint256 requestId) external view returns (bool) {
		return _has(fulfilledSet, requestId) && block.timestamp < requests[requestId].expirationTime;
	}

	/// @notice Open requests of `user`, `limit` of them from `offset` (limit 0: all after offset).
	function getRequestsByOwner(address user, uint256 offset, uint256 limit) external view returns (uint256[] memory ids) {
		uint256[] storage all = byOwner[user].ids;
		uint256 total = all.length;
		if (offset >= total) return new uint256[](0);
		uint256 end = limit == 0 || offset + limit > total ? total : offset + limit;
		ids = new uint256[](end - offset);
		for (uint256 i = offset; i < end; ++i) ids[i - offset] = all[i];
	}

	function getPendingRequestsCount() external view returns (uint256) {
		return pendingSet.ids.length;
	}

	function getAllPendingRequests() external view returns (uint256[] memory) {
		return pendingSet.ids;
	}

	function isRequestPending(uint256 requestId) external view returns (bool) {
		return _has(pendingSet, requestId);
	}

	function getFulfilledRequestsCount() external view returns (uint256) {
		return fulfilledSet.ids.length;
	}

	function getAllFulfilledRequests() external view returns (uint256[] memory) {
		return fulfilledSet.ids;
	}

	function isFulfilledRequest(uint256 requestId) external view returns (bool) {
		return _has(fulfilledSet, requestId);
	}

	/// @notice Open requests (pending or fulfilled) at or past their expirationTime.
	function getExpiredRequestsCount() external view returns (uint256 count) {
		count = _expired(fulfilledSet) + _expired(pendingSet);
	}

	function getMaxRequestsPerStakingDeposit() external view returns (uint256) {
		return maxRequestsPerStakingDeposit;
	}

	function getMinUnstakeOnBehalfOfAmt() external view returns (uint256) {
		return minUnstakeOnBehalfOfAmt;
	}

	// ---- roles (AccessControl surface) ----

	function hasRole(bytes32 role, address account) external view returns (bool) {
		return roles[role][account];
	}

	function getRoleAdmin(bytes32) external pure returns (bytes32) {
		return DEFAULT_ADMIN_ROLE;
	}

	function grantRole(bytes32 role, address account) external onlyRole(DEFAULT_ADMIN_ROLE) {
		_grant(role, account);
	}

	function revokeRole(bytes32 role, address account) external onlyRole(DEFAULT_ADMIN_ROLE) {
		if (roles[role][account]) {
			roles[role][account] = false;
			emit RoleRevoked(role, account, msg.sender);
		}
	}

	/// @dev ERC-165 and IAccessControl.
	function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
		return interfaceId == 0x01ffc9a7 || interfaceId == 0x7965db0b;
	}

	// ---- admin ----

	function pause() external onlyRole(PAUSER_ROLE) {
		paused = true;
		emit ContractPaused(msg.sender);
	}

	function unpause() external onlyRole(PAUSER_ROLE) {
		paused = false;
		emit ContractUnpaused(msg.sender);
	}

	/// @dev Setters emit nothing, as on mainnet. New delays apply to later requests only.
	function setUnstakeDelay(uint48 newUnstakeDelay) external onlyRole(DEFAULT_ADMIN_ROLE) {
		unstakeDelay = newUnstakeDelay;
	}

	function setMaxExpirationDelay(uint48 newMaxExpirationDelay) external onlyRole(DEFAULT_ADMIN_ROLE) {
		if (newMaxExpirationDelay < MIN_EXPIRATION_DELAY) revert InvalidExpirationDelay();
		maxExpirationDelay = newMaxExpirationDelay;
	}

	function setMaxRequestsPerStakingDeposit(uint256 newLimit) external onlyRole(DEFAULT_ADMIN_ROLE) {
		maxRequestsPerStakingDeposit = newLimit;
	}

	function setMinUnstakeOnBehalfOfAmt(uint256 newMin) external onlyRole(DEFAULT_ADMIN_ROLE) {
		minUnstakeOnBehalfOfAmt = newMin;
	}

	// ---- internals ----

	function _file(address requester, uint256 shares, uint48 expirationDelay, uint48 time) private returns (uint256 requestId) {
		if (shares == 0) revert ZeroShares();
		if (expirationDelay > maxExpirationDelay) revert InvalidExpirationDelay();
		if (expirationDelay < MIN_EXPIRATION_DELAY) expirationDelay = MIN_EXPIRATION_DELAY;
		uint256 expected = tokenggAVAX.convertToAssets(shares);
		requestId = nextRequestId++;
		uint48 claimable = time + unstakeDelay;
		requests[requestId] = UnstakeRequest(requester, shares, expected, time, claimable, claimable + expirationDelay, 0);
		_add(byOwner[requester], requestId);
		_add(pendingSet, requestId);
		line[lineBack++] = requestId;
		lastRequestTime = time;
		emit UnstakeRequested(requestId, requester, shares, expected, claimable);
	}

	/// @dev Claim, cancel and reclaim delete the record: all seven fields read zero afterwards.
	function _close(uint256 requestId, address requester) private {
		_remove(byOwner[requester], requestId);
		delete requests[requestId];
	}

	function _redeposit(uint256 amount) private returns (uint256 shares) {
		wavax.approve(address(tokenggAVAX), amount);
		shares = tokenggAVAX.deposit(amount, address(this));
	}

	/// @dev ggAVAX assets not out staking, floored at 0; the reserve is not kept back.
	function _vaultLiquidity() private view returns (uint256) {
		uint256 assets = tokenggAVAX.totalAssets();
		uint256 staking = tokenggAVAX.stakingTotalAssets();
		return assets > staking ? assets - staking : 0;
	}

	function _popFront() private {
		delete line[lineFront];
		++lineFront;
	}

	function _expired(IdSet storage set) private view returns (uint256 count) {
		uint256 n = set.ids.length;
		for (uint256 i = 0; i < n; ++i) {
			if (block.timestamp >= requests[set.ids[i]].expirationTime) ++count;
		}
	}

	function _grant(bytes32 role, address account) private {
		if (!roles[role][account]) {
			roles[role][account] = true;
			emit RoleGranted(role, account, msg.sender);
		}
	}

	function _has(IdSet storage set, uint256 id) private view returns (bool) {
		return set.position[id] != 0;
	}

	function _add(IdSet storage set, uint256 id) private {
		set.ids.push(id);
		set.position[id] = set.ids.length;
	}

	function _remove(IdSet storage set, uint256 id) private {
		uint256 at = set.position[id];
		uint256 last = set.ids.length;
		if (at != last) {
			uint256 moved = set.ids[last - 1];
			set.ids[at - 1] = moved;
			set.position[moved] = at;
		}
		set.ids.pop();
		delete set.position[id];
	}
}
