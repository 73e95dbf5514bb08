// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {ERC20} from "./ERC20.sol";
import {Storage} from "./Storage.sol";

/// @title Wrapped AVAX (WETH9 interface) with seeding mint/burn
/// @dev mint/burn let TokenggAVAX model AVAX leaving for and returning from validators without moving real ETH.
contract WAVAX is ERC20, Base {
	error TransferFailed();

	event Deposit(address indexed dst, uint256 wad);
	event Withdrawal(address indexed src, uint256 wad);

	constructor(Storage store_) ERC20("Wrapped AVAX", "WAVAX", 18) Base(store_) {}

	receive() external payable {
		deposit();
	}

	function deposit() public payable {
		_mint(msg.sender, msg.value);
		emit Deposit(msg.sender, msg.value);
	}

	/// @dev Fails if the caller's balance was minted rather than deposited and the contract lacks the AVAX.
	function withdraw(uint256 wad) external {
		_burn(msg.sender, wad);
		emit Withdrawal(msg.sender, wad);
		(bool ok, ) = msg.sender.call{value: wad}("");
		if (!ok) revert TransferFailed();
	}

	function mint(address to, uint256 amt) external onlyOwnerOrNetwork {
		_mint(to, amt);
	}

	function burn(address from, uint256 amt) external onlyOwnerOrNetwork {
		_burn(from, amt);
	}
}
