// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Owned} from "./Owned.sol";

/// @title Uniswap-v2 / Trader Joe v1 pair with owner-set reserves
/// @dev Keeps the cumulative price accumulators so TWAP readers work as against a real pair.
contract DexPair is Owned {
	error IdenticalAddresses();

	event Sync(uint112 reserve0, uint112 reserve1);

	address public constant factory = address(0);
	address public immutable token0;
	address public immutable token1;

	uint112 private reserve0;
	uint112 private reserve1;
	uint32 private blockTimestampLast;

	uint256 public price0CumulativeLast;
	uint256 public price1CumulativeLast;

	constructor(address tokenA, address tokenB) {
		if (tokenA == tokenB) revert IdenticalAddresses();
		(token0, token1) = tokenA < tokenB ? (tokenA, tokenB) : (tokenB, tokenA);
	}

	function getReserves() external view returns (uint112 _reserve0, uint112 _reserve1, uint32 _blockTimestampLast) {
		return (reserve0, reserve1, blockTimestampLast);
	}

	function setReserves(uint112 newReserve0, uint112 newReserve1) external onlyOwner {
		uint32 ts = uint32(block.timestamp);
		unchecked {
			// Wrapping arithmetic and UQ112x112 prices exactly as UniswapV2Pair._update.
			uint32 elapsed = ts - blockTimestampLast;
			if (elapsed > 0 && reserve0 != 0 && reserve1 != 0) {
				price0CumulativeLast += ((uint256(reserve1) << 112) / reserve0) * elapsed;
				price1CumulativeLast += ((uint256(reserve0) << 112) / reserve1) * elapsed;
			}
		}
		reserve0 = newReserve0;
		reserve1 = newReserve1;
		blockTimestampLast = ts;
		emit Sync(newReserve0, newReserve1);
	}
}
