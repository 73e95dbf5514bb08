// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {ERC20} from "./ERC20.sol";
import {Storage} from "./Storage.sol";

/// @title GGP governance/reward token
/// @dev Starts at zero supply; the seeder mints the circulating supply and RewardsPool mints inflation.
contract TokenGGP is ERC20, Base {
	error MaximumTokensReached();

	uint256 public constant MAX_SUPPLY = 22_500_000 ether;

	constructor(Storage store_) ERC20("GoGoPool Protocol", "GGP", 18) Base(store_) {}

	function mint(address to, uint256 amt) external onlyOwnerOrNetwork {
		if (totalSupply + amt > MAX_SUPPLY) revert MaximumTokensReached();
		_mint(to, amt);
	}
}
