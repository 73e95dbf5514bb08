// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {Storage} from "./Storage.sol";

/// @title GGP price in AVAX as published by the protocol oracle
contract Oracle is Base {
	error InvalidGGPPrice();

	event GGPPriceUpdated(uint256 indexed price, uint256 timestamp);

	uint256 private ggpPriceInAVAX;
	uint256 private ggpPriceTimestamp;

	constructor(Storage store_) Base(store_) {}

	function getGGPPriceInAVAX() external view returns (uint256 price, uint256 timestamp) {
		price = ggpPriceInAVAX;
		if (price == 0) revert InvalidGGPPrice();
		timestamp = ggpPriceTimestamp;
	}

	/// @dev Unlike mainnet, any timestamp (stale or future) and a zero price are accepted so faults can be injected.
	function setGGPPriceInAVAX(uint256 price, uint256 timestamp) external onlyOwnerOrNetwork {
		ggpPriceInAVAX = price;
		ggpPriceTimestamp = timestamp;
		emit GGPPriceUpdated(price, timestamp);
	}
}
