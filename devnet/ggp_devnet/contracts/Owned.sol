// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Single fixed owner (the deployer)
/// @dev The devnet never hands contracts over, so the owner is immutable and costs no storage read.
abstract contract Owned {
	error NotOwner();

	address public immutable owner;

	constructor() {
		owner = msg.sender;
	}

	modifier onlyOwner() {
		if (msg.sender != owner) revert NotOwner();
		_;
	}
}
