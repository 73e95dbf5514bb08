// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Owned} from "./Owned.sol";

/// @title Key/value registry shared by all protocol contracts
/// @dev Same getter surface and key scheme as the mainnet Storage contract. Writes are owner-only:
///      protocol contracts keep their own state and only read the registry.
contract Storage is Owned {
	mapping(bytes32 => address) private addressStorage;
	mapping(bytes32 => bool) private boolStorage;
	mapping(bytes32 => bytes32) private bytes32Storage;
	mapping(bytes32 => int256) private intStorage;
	mapping(bytes32 => string) private stringStorage;
	mapping(bytes32 => uint256) private uintStorage;

	function getGuardian() external view returns (address) {
		return owner;
	}

	function getAddress(bytes32 key) external view returns (address) {
		return addressStorage[key];
	}

	function getBool(bytes32 key) external view returns (bool) {
		return boolStorage[key];
	}

	function getBytes32(bytes32 key) external view returns (bytes32) {
		return bytes32Storage[key];
	}

	function getInt(bytes32 key) external view returns (int256) {
		return intStorage[key];
	}

	function getString(bytes32 key) external view returns (string memory) {
		return stringStorage[key];
	}

	function getUint(bytes32 key) external view returns (uint256) {
		return uintStorage[key];
	}

	function setAddress(bytes32 key, address value) external onlyOwner {
		addressStorage[key] = value;
	}

	function setBool(bytes32 key, bool value) external onlyOwner {
		boolStorage[key] = value;
	}

	function setBytes32(bytes32 key, bytes32 value) external onlyOwner {
		bytes32Storage[key] = value;
	}

	function setInt(bytes32 key, int256 value) external onlyOwner {
		intStorage[key] = value;
	}

	function setString(bytes32 key, string calldata value) external onlyOwner {
		stringStorage[key] = value;
	}

	function setUint(bytes32 key, uint256 value) external onlyOwner {
		uintStorage[key] = value;
	}

	/// @notice Register a network contract the way mainnet's ProtocolDAO.registerContract does.
	function registerContract(string calldata name, address addr) external onlyOwner {
		addressStorage[keccak256(abi.encodePacked("contract.address", name))] = addr;
		stringStorage[keccak256(abi.encodePacked("contract.name", addr))] = name;
		boolStorage[keccak256(abi.encodePacked("contract.exists", addr))] = true;
	}

	function setPaused(string calldata name, bool paused) external onlyOwner {
		boolStorage[keccak256(abi.encodePacked("contract.paused", name))] = paused;
	}
}
