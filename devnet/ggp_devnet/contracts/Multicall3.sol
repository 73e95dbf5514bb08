// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Multicall3-compatible batcher
/// @dev Installed with anvil_setCode at the canonical address, so it holds no state and no immutables.
contract Multicall3 {
	struct Call {
		address target;
		bytes callData;
	}

	struct Call3 {
		address target;
		bool allowFailure;
		bytes callData;
	}

	struct Call3Value {
		address target;
		bool allowFailure;
		uint256 value;
		bytes callData;
	}

	struct Result {
		bool success;
		bytes returnData;
	}

	function aggregate(Call[] calldata calls) public payable returns (uint256 blockNumber, bytes[] memory returnData) {
		blockNumber = block.number;
		returnData = new bytes[](calls.length);
		for (uint256 i; i < calls.length; ++i) {
			bool success;
			(success, returnData[i]) = calls[i].target.call(calls[i].callData);
			require(success, "Multicall3: call failed");
		}
	}

	function tryAggregate(bool requireSuccess, Call[] calldata calls) public payable returns (Result[] memory returnData) {
		returnData = new Result[](calls.length);
		for (uint256 i; i < calls.length; ++i) {
			Result memory r = returnData[i];
			(r.success, r.returnData) = calls[i].target.call(calls[i].callData);
			if (requireSuccess) require(r.success, "Multicall3: call failed");
		}
	}

	function tryBlockAndAggregate(
		bool requireSuccess,
		Call[] calldata calls
	) public payable returns (uint256 blockNumber, bytes32 blockHash, Result[] memory returnData) {
		blockNumber = block.number;
		blockHash = blockhash(block.number);
		returnData = tryAggregate(requireSuccess, calls);
	}

	function blockAndAggregate(Call[] calldata calls) public payable returns (uint256 blockNumber, bytes32 blockHash, Result[] memory returnData) {
		(blockNumber, blockHash, returnData) = tryBlockAndAggregate(true, calls);
	}

	function aggregate3(Call3[] calldata calls) public payable returns (Result[] memory returnData) {
		returnData = new Result[](calls.length);
		for (uint256 i; i < calls.length; ++i) {
			Call3 calldata c = calls[i];
			Result memory r = returnData[i];
			(r.success, r.returnData) = c.target.call(c.callData);
			if (!r.success && !c.allowFailure) revert("Multicall3: call failed");
		}
	}

	function aggregate3Value(Call3Value[] calldata calls) public payable returns (Result[] memory returnData) {
		uint256 valueAccumulator;
		returnData = new Result[](calls.length);
		for (uint256 i; i < calls.length; ++i) {
			Call3Value calldata c = calls[i];
			Result memory r = returnData[i];
			valueAccumulator += c.value;
			(r.success, r.returnData) = c.target.call{value: c.value}(c.callData);
			if (!r.success && !c.allowFailure) revert("Multicall3: call failed");
		}
		require(msg.value == valueAccumulator, "Multicall3: value mismatch");
	}

	function getBlockHash(uint256 blockNumber) public view returns (bytes32 blockHash) {
		blockHash = blockhash(blockNumber);
	}

	function getBlockNumber() public view returns (uint256 blockNumber) {
		blockNumber = block.number;
	}

	function getCurrentBlockCoinbase() public view returns (address coinbase) {
		coinbase = block.coinbase;
	}

	/// @dev Post-merge the DIFFICULTY opcode is PREVRANDAO; canonical Multicall3 returns the same word.
	function getCurrentBlockDifficulty() public view returns (uint256 difficulty) {
		difficulty = block.prevrandao;
	}

	function getCurrentBlockGasLimit() public view returns (uint256 gaslimit) {
		gaslimit = block.gaslimit;
	}

	function getCurrentBlockTimestamp() public view returns (uint256 timestamp) {
		timestamp = block.timestamp;
	}

	function getEthBalance(address addr) public view returns (uint256 balance) {
		balance = addr.balance;
	}

	function getLastBlockHash() public view returns (bytes32 blockHash) {
		unchecked {
			blockHash = blockhash(block.number - 1);
		}
	}

	function getBasefee() public view returns (uint256 basefee) {
		basefee = block.basefee;
	}

	function getChainId() public view returns (uint256 chainid) {
		chainid = block.chainid;
	}
}
