// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "./ERC20.sol";
import {Owned} from "./Owned.sol";
import {TokenggAVAX} from "./TokenggAVAX.sol";
import {WAVAX} from "./WAVAX.sol";
import {WithdrawQueue} from "./WithdrawQueue.sol";

/// @title Principal-only stAVAX: AVAX in 1:1, parked as ggAVAX shares, yield given away
/// @notice Holders earn points instead of yield: before every deposit and withdrawal the shares
///         backing more than the token's supply are burnt through ggAVAX donateYield, raising the
///         rate for all ggAVAX holders. Leaving goes through the queue: withdrawViaQueue burns the
///         tokens and files requestUnstakeOnBehalfOf with the user as requester (this contract only
///         provides the shares), so the user claims from the queue directly.
/// @dev Minimal: no strip fee, no lstAVAX treasury variant.
contract TokenpstAVAX is ERC20, Owned {
	error ZeroAmount();
	error EnforcedPause();

	event Deposited(address indexed user, uint256 assets, uint256 vaultShares);
	event Withdrawn(address indexed user, uint256 assets, uint256 vaultShares);
	event WithdrawnViaQueue(address indexed user, uint256 pstShares, uint256 vaultShares, uint256 requestId);
	event YieldStripped(uint256 sharesBurnt);
	event Paused(address account);
	event Unpaused(address account);

	bytes32 private constant SOURCE = "pstAVAX";

	TokenggAVAX public immutable vault;
	WAVAX public immutable underlyingAsset;
	WithdrawQueue public immutable withdrawQueue;
	bool public paused;

	modifier whenNotPaused() {
		if (paused) revert EnforcedPause();
		_;
	}

	constructor(TokenggAVAX vault_, WAVAX wavax_, WithdrawQueue queue_) ERC20("Principal stAVAX", "pstAVAX", 18) {
		vault = vault_;
		underlyingAsset = wavax_;
		withdrawQueue = queue_;
	}

	/// @notice AVAX in, the same amount of pstAVAX out.
	function depositAVAX() external payable whenNotPaused returns (uint256 vaultShares) {
		if (msg.value == 0) revert ZeroAmount();
		stripYield();
		vaultShares = vault.depositAVAX{value: msg.value}();
		_mint(msg.sender, msg.value);
		emit Deposited(msg.sender, msg.value, vaultShares);
	}

	/// @notice WAVAX in (pulled from the caller), the same amount of pstAVAX out.
	function depositWAVAX(uint256 assets) external whenNotPaused returns (uint256 vaultShares) {
		if (assets == 0) revert ZeroAmount();
		stripYield();
		underlyingAsset.transferFrom(msg.sender, address(this), assets);
		underlyingAsset.approve(address(vault), assets);
		vaultShares = vault.deposit(assets, address(this));
		_mint(msg.sender, assets);
		emit Deposited(msg.sender, assets, vaultShares);
	}

	/// @notice Burn `assets` pstAVAX for the ggAVAX shares worth them, at once.
	function withdraw(uint256 assets) external whenNotPaused returns (uint256 vaultShares) {
		if (assets == 0) revert ZeroAmount();
		stripYield();
		_burn(msg.sender, assets);
		vaultShares = vault.convertToShares(assets);
		vault.transfer(msg.sender, vaultShares);
		emit Withdrawn(msg.sender, assets, vaultShares);
	}

	/// @notice Burn `assets` pstAVAX and queue the shares worth them for the caller.
	function withdrawViaQueue(uint256 assets, uint48 expirationDelay) external whenNotPaused returns (uint256 vaultShares, uint256 requestId) {
		if (assets == 0) revert ZeroAmount();
		stripYield();
		_burn(msg.sender, assets);
		vaultShares = vault.convertToShares(assets);
		vault.approve(address(withdrawQueue), vaultShares);
		requestId = withdrawQueue.requestUnstakeOnBehalfOf(vaultShares, msg.sender, expirationDelay);
		emit WithdrawnViaQueue(msg.sender, assets, vaultShares, requestId);
	}

	/// @notice Burn the shares beyond those the supply needs (yield for all ggAVAX holders).
	function stripYield() public {
		(, uint256 excess) = getExcessShares();
		if (excess == 0) return;
		vault.donateYield(excess, SOURCE);
		emit YieldStripped(excess);
	}

	/// @return feeShares always 0 (no strip fee here)
	/// @return burnShares shares held beyond what backs totalSupply at today's rate
	function getExcessShares() public view returns (uint256 feeShares, uint256 burnShares) {
		uint256 held = vault.balanceOf(address(this));
		uint256 needed = vault.previewWithdraw(totalSupply);
		return (0, held > needed ? held - needed : 0);
	}

	function pause() external onlyOwner {
		paused = true;
		emit Paused(msg.sender);
	}

	function unpause() external onlyOwner {
		paused = false;
		emit Unpaused(msg.sender);
	}
}
