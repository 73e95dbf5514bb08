// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Owned} from "./Owned.sol";
import {Storage} from "./Storage.sol";

/// @title Shared plumbing for protocol contracts: registry lookups, access control, WAD math
abstract contract Base is Owned {
	error NotAuthorized();
	error ContractNotFound(string name);
	error ContractPaused();

	Storage public immutable store;

	constructor(Storage store_) {
		store = store_;
	}

	/// @dev Registered contracts may call each other (e.g. RewardsPool minting GGP), as on mainnet.
	modifier onlyOwnerOrNetwork() {
		if (msg.sender != owner && !store.getBool(keccak256(abi.encodePacked("contract.exists", msg.sender)))) {
			revert NotAuthorized();
		}
		_;
	}

	/// @dev The guardian's pause switch (Storage "contract.paused" + name), as mainnet's whenNotPaused.
	modifier whenNotPaused(string memory name) {
		if (_paused(name)) revert ContractPaused();
		_;
	}

	function _contract(string memory name) internal view returns (address addr) {
		addr = store.getAddress(keccak256(abi.encodePacked("contract.address", name)));
		if (addr == address(0)) revert ContractNotFound(name);
	}

	function _paused(string memory name) internal view returns (bool) {
		return store.getBool(keccak256(abi.encodePacked("contract.paused", name)));
	}

	// Rounding matches solmate's FixedPointMathLib, which the mainnet contracts use.

	function mulWadDown(uint256 x, uint256 y) internal pure returns (uint256) {
		return (x * y) / 1 ether;
	}

	function divWadDown(uint256 x, uint256 y) internal pure returns (uint256) {
		return (x * 1 ether) / y;
	}

	function mulDivDown(uint256 x, uint256 y, uint256 d) internal pure returns (uint256) {
		return (x * y) / d;
	}

	function mulDivUp(uint256 x, uint256 y, uint256 d) internal pure returns (uint256) {
		uint256 p = x * y;
		return p == 0 ? 0 : (p - 1) / d + 1;
	}
}
