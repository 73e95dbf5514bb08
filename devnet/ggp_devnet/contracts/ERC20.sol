// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Minimal ERC-20 (solmate-style storage layout, no permit)
abstract contract ERC20 {
	error InsufficientBalance();
	error InsufficientAllowance();

	event Transfer(address indexed from, address indexed to, uint256 amount);
	event Approval(address indexed owner, address indexed spender, uint256 amount);

	string public name;
	string public symbol;
	uint8 public immutable decimals;

	uint256 public totalSupply;
	mapping(address => uint256) public balanceOf;
	mapping(address => mapping(address => uint256)) public allowance;

	constructor(string memory name_, string memory symbol_, uint8 decimals_) {
		name = name_;
		symbol = symbol_;
		decimals = decimals_;
	}

	function approve(address spender, uint256 amount) public returns (bool) {
		allowance[msg.sender][spender] = amount;
		emit Approval(msg.sender, spender, amount);
		return true;
	}

	function transfer(address to, uint256 amount) public returns (bool) {
		_transfer(msg.sender, to, amount);
		return true;
	}

	function transferFrom(address from, address to, uint256 amount) public returns (bool) {
		uint256 allowed = allowance[from][msg.sender];
		// An infinite approval is never decremented, as in WETH9 and solmate.
		if (allowed != type(uint256).max) {
			if (allowed < amount) revert InsufficientAllowance();
			unchecked {
				allowance[from][msg.sender] = allowed - amount;
			}
		}
		_transfer(from, to, amount);
		return true;
	}

	function _transfer(address from, address to, uint256 amount) internal {
		uint256 bal = balanceOf[from];
		if (bal < amount) revert InsufficientBalance();
		unchecked {
			balanceOf[from] = bal - amount;
			// Cannot overflow: the sum of all balances is bounded by totalSupply.
			balanceOf[to] += amount;
		}
		emit Transfer(from, to, amount);
	}

	function _mint(address to, uint256 amount) internal {
		totalSupply += amount;
		unchecked {
			balanceOf[to] += amount;
		}
		emit Transfer(address(0), to, amount);
	}

	function _burn(address from, uint256 amount) internal {
		uint256 bal = balanceOf[from];
		if (bal < amount) revert InsufficientBalance();
		unchecked {
			balanceOf[from] = bal - amount;
			totalSupply -= amount;
		}
		emit Transfer(from, address(0), amount);
	}
}
