// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Owned} from "./Owned.sol";

/// @title Chainlink-style aggregator with owner-fed rounds
contract PriceFeed is Owned {
	error NoDataPresent();

	event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt);
	event NewRound(uint256 indexed roundId, address indexed startedBy, uint256 startedAt);

	struct Round {
		int256 answer;
		uint256 startedAt;
		uint256 updatedAt;
		uint80 answeredInRound;
		bool exists;
	}

	uint256 public constant version = 4;
	uint8 public immutable decimals;
	string public description;

	uint80 private latestRoundId;
	mapping(uint80 => Round) private rounds;

	constructor(uint8 decimals_, string memory description_) {
		decimals = decimals_;
		description = description_;
	}

	function latestRoundData() external view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound) {
		return getRoundData(latestRoundId);
	}

	function getRoundData(
		uint80 _roundId
	) public view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound) {
		Round storage r = rounds[_roundId];
		if (!r.exists) revert NoDataPresent();
		return (_roundId, r.answer, r.startedAt, r.updatedAt, r.answeredInRound);
	}

	function latestAnswer() external view returns (int256) {
		return rounds[latestRoundId].answer;
	}

	function latestTimestamp() external view returns (uint256) {
		return rounds[latestRoundId].updatedAt;
	}

	function latestRound() external view returns (uint256) {
		return latestRoundId;
	}

	// ---- seeding ----

	function updateAnswer(int256 answer, uint256 updatedAt) external onlyOwner {
		uint80 roundId = latestRoundId + 1;
		latestRoundId = roundId;
		rounds[roundId] = Round(answer, updatedAt, updatedAt, roundId, true);
		emit NewRound(roundId, msg.sender, updatedAt);
		emit AnswerUpdated(answer, roundId, updatedAt);
	}

	/// @notice Make `roundId` the latest round with verbatim values (stale, incomplete or rewound rounds).
	function setRound(uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound) external onlyOwner {
		latestRoundId = roundId;
		rounds[roundId] = Round(answer, startedAt, updatedAt, answeredInRound, true);
	}
}
