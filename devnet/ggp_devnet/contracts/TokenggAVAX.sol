// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Base} from "./Base.sol";
import {ERC20} from "./ERC20.sol";
import {ProtocolDAO} from "./ProtocolDAO.sol";
import {Storage} from "./Storage.sol";
import {WAVAX} from "./WAVAX.sol";

/// @title Liquid staking vault (xERC4626 streaming rewards), mainnet view surface
/// @dev Instead of moving AVAX, seeding mints/burns WAVAX held by this contract, so
///      asset.balanceOf(this) behaves exactly as on mainnet for syncRewards().
///
///      Exits as on mainnet since the liquid-staking upgrade: only WITHDRAW_QUEUE_ROLE may burn
///      shares for assets (redeemAVAX, withdrawAVAX, ERC-4626 redeem/withdraw); holders leave
///      through the WithdrawQueue. The devnet difference: the AVAX-paying functions pay WAVAX (the
///      queue holds and pays WAVAX), and depositYieldWAVAX is the WAVAX twin of depositYield for
///      a caller holding WAVAX rather than AVAX. Roles are this contract's own (not OpenZeppelin):
///      the owner is the single DEFAULT_ADMIN_ROLE holder and grants the others.
contract TokenggAVAX is ERC20, Base {
	error SyncError();
	error ZeroShares();
	error ZeroAssets();
	error InvalidStakingDeposit();
	error InvalidRewardsCycleLength();
	error RewardsOverflow();
	error InsufficientLiquidity();
	error ZeroSharesToBurn();
	error InsufficientShares();
	error AccessControlUnauthorizedAccount(address account, bytes32 neededRole);
	error AdminRoleNotGrantable();

	event Deposit(address indexed caller, address indexed owner, uint256 assets, uint256 shares);
	event Withdraw(address indexed caller, address indexed receiver, address indexed owner, uint256 assets, uint256 shares);
	// Mainnet TokenggAVAX declares cycleEnd as uint256 (not xERC4626's uint32), which fixes topic0.
	event NewRewardsCycle(uint256 indexed cycleEnd, uint256 rewardsAmt);
	event DepositedFromStaking(bytes32 indexed source, address indexed caller, uint256 baseAmt, uint256 rewardsAmt);
	event FeeCollected(bytes32 indexed source, uint256 feeAmount);
	event WithdrawnForStaking(bytes32 indexed purpose, address indexed caller, uint256 assets);
	event DepositedAdditionalYield(bytes32 indexed source, address indexed caller, uint256 baseAmount, uint256 rewardAmt);
	event YieldDonated(address indexed caller, bytes32 indexed source, uint256 sharesBurnt, uint256 avaxEquivalent);
	event RoleGranted(bytes32 indexed role, address indexed account, address indexed sender);
	event RoleRevoked(bytes32 indexed role, address indexed account, address indexed sender);

	uint8 public constant version = 3;
	bytes32 public constant MINIPOOL_SOURCE = bytes32("MINIPOOL_SOURCE");
	bytes32 public constant DEFAULT_ADMIN_ROLE = 0x00;
	bytes32 public constant STAKER_ROLE = keccak256("STAKER_ROLE");
	bytes32 public constant WITHDRAW_QUEUE_ROLE = keccak256("WITHDRAW_QUEUE_ROLE");

	WAVAX public immutable asset;
	uint32 public immutable rewardsCycleLength;

	uint32 public lastSync;
	uint32 public rewardsCycleEnd;
	uint192 public lastRewardsAmt;
	uint256 public totalReleasedAssets;
	uint256 public stakingTotalAssets;

	mapping(bytes32 => mapping(address => bool)) private _roles;

	modifier onlyRole(bytes32 role) {
		if (!hasRole(role, msg.sender)) revert AccessControlUnauthorizedAccount(msg.sender, role);
		_;
	}

	constructor(Storage store_, WAVAX asset_, uint32 rewardsCycleLength_) ERC20("Hypha Staked AVAX", "stAVAX", 18) Base(store_) {
		if (rewardsCycleLength_ == 0) revert InvalidRewardsCycleLength();
		asset = asset_;
		rewardsCycleLength = rewardsCycleLength_;
		// Aligned to a cycle boundary, as mainnet initialize() does.
		rewardsCycleEnd = (uint32(block.timestamp) / rewardsCycleLength_) * rewardsCycleLength_;
	}

	// ---- views ----

	function totalAssets() public view returns (uint256) {
		uint256 released = totalReleasedAssets;
		uint256 rewards = lastRewardsAmt;
		uint256 end = rewardsCycleEnd;
		if (block.timestamp >= end) return released + rewards;
		uint256 sync = lastSync;
		return released + (rewards * (block.timestamp - sync)) / (end - sync);
	}

	function amountAvailableForStaking() public view returns (uint256) {
		uint256 assets = totalAssets();
		uint256 reserved = mulWadDown(assets, ProtocolDAO(_contract("ProtocolDAO")).getTargetGGAVAXReserveRate());
		uint256 committed = reserved + stakingTotalAssets;
		return committed > assets ? 0 : assets - committed;
	}

	function convertToShares(uint256 assets) public view returns (uint256) {
		uint256 supply = totalSupply;
		return supply == 0 ? assets : mulDivDown(assets, supply, totalAssets());
	}

	function convertToAssets(uint256 shares) public view returns (uint256) {
		uint256 supply = totalSupply;
		return supply == 0 ? shares : mulDivDown(shares, totalAssets(), supply);
	}

	function previewDeposit(uint256 assets) public view returns (uint256) {
		if (assets > 0 && _paused("TokenggAVAX")) revert ContractPaused();
		return convertToShares(assets);
	}

	function previewMint(uint256 shares) public view returns (uint256) {
		if (shares > 0 && _paused("TokenggAVAX")) revert ContractPaused();
		uint256 supply = totalSupply;
		return supply == 0 ? shares : mulDivUp(shares, totalAssets(), supply);
	}

	function previewWithdraw(uint256 assets) public view returns (uint256) {
		uint256 supply = totalSupply;
		return supply == 0 ? assets : mulDivUp(assets, supply, totalAssets());
	}

	function previewRedeem(uint256 shares) public view returns (uint256) {
		return convertToAssets(shares);
	}

	function maxDeposit(address) public view returns (uint256) {
		return _paused("TokenggAVAX") ? 0 : type(uint256).max;
	}

	function maxMint(address) public view returns (uint256) {
		return _paused("TokenggAVAX") ? 0 : type(uint256).max;
	}

	function maxWithdraw(address _owner) public view returns (uint256) {
		uint256 assets = convertToAssets(balanceOf[_owner]);
		uint256 avail = _liquidAssets();
		return assets > avail ? avail : assets;
	}

	function maxRedeem(address _owner) public view returns (uint256) {
		uint256 shares = balanceOf[_owner];
		uint256 avail = convertToShares(_liquidAssets());
		return shares > avail ? avail : shares;
	}

	/// @dev Assets not out on validators; mainnet would underflow-revert where this returns 0.
	function _liquidAssets() internal view returns (uint256) {
		uint256 assets = totalAssets();
		uint256 staking = stakingTotalAssets;
		return assets > staking ? assets - staking : 0;
	}

	// ---- rewards ----

	function syncRewards() external onlyOwnerOrNetwork {
		if (block.timestamp < rewardsCycleEnd) revert SyncError();

		uint256 lastRewards = lastRewardsAmt;
		uint256 released = totalReleasedAssets;
		// Checked: a WAVAX shortfall against the books must revert, never wrap.
		uint256 nextRewards = asset.balanceOf(address(this)) + stakingTotalAssets - released - lastRewards;
		if (nextRewards > type(uint192).max) revert RewardsOverflow();
		uint256 len = rewardsCycleLength;
		uint256 end = ((block.timestamp + len) / len) * len;

		totalReleasedAssets = released + lastRewards;
		lastRewardsAmt = uint192(nextRewards);
		lastSync = uint32(block.timestamp);
		rewardsCycleEnd = uint32(end);
		emit NewRewardsCycle(end, nextRewards);
	}

	// ---- roles ----

	function hasRole(bytes32 role, address account) public view returns (bool) {
		return role == DEFAULT_ADMIN_ROLE ? account == owner : _roles[role][account];
	}

	function admin() external view returns (address) {
		return owner;
	}

	function grantRole(bytes32 role, address account) external onlyOwner {
		if (role == DEFAULT_ADMIN_ROLE) revert AdminRoleNotGrantable();
		if (!_roles[role][account]) {
			_roles[role][account] = true;
			emit RoleGranted(role, account, msg.sender);
		}
	}

	function revokeRole(bytes32 role, address account) external onlyOwner {
		if (_roles[role][account]) {
			_roles[role][account] = false;
			emit RoleRevoked(role, account, msg.sender);
		}
	}

	// ---- deposits (anyone) ----

	/// @notice AVAX in, shares out (the AVAX is wrapped: the vault holds WAVAX).
	function depositAVAX() external payable returns (uint256 shares) {
		shares = _depositShares(msg.value);
		asset.deposit{value: msg.value}();
		_afterDeposit(msg.value, shares, msg.sender);
	}

	/// @notice ERC-4626 deposit: WAVAX in (pulled from the caller), shares to `receiver`.
	function deposit(uint256 assets, address receiver) external returns (uint256 shares) {
		shares = _depositShares(assets);
		asset.transferFrom(msg.sender, address(this), assets);
		_afterDeposit(assets, shares, receiver);
	}

	/// @notice Yield from outside (MEV, the queue's surplus): the fee goes to the protocol, the rest
	///         waits in WAVAX for the next syncRewards. The owner stands in for ClaimProtocolDAO.
	function depositYield(bytes32 source) external payable {
		uint256 fee = _fee(msg.value);
		asset.deposit{value: msg.value - fee}();
		if (fee > 0) {
			(bool ok, ) = owner.call{value: fee}("");
			if (!ok) revert InvalidStakingDeposit();
			emit FeeCollected(source, fee);
		}
		emit DepositedAdditionalYield(source, msg.sender, msg.value, fee);
	}

	/// @notice Devnet twin of depositYield for a caller holding WAVAX (the queue).
	function depositYieldWAVAX(uint256 amount, bytes32 source) external {
		uint256 fee = _fee(amount);
		asset.transferFrom(msg.sender, address(this), amount);
		if (fee > 0) {
			asset.transfer(owner, fee);
			emit FeeCollected(source, fee);
		}
		emit DepositedAdditionalYield(source, msg.sender, amount, fee);
	}

	/// @notice Burn your own shares, no assets leave: the rate rises for every holder.
	function donateYield(uint256 shares, bytes32 source) external {
		if (shares == 0) revert ZeroSharesToBurn();
		if (balanceOf[msg.sender] < shares) revert InsufficientShares();
		_burn(msg.sender, shares);
		emit YieldDonated(msg.sender, source, shares, convertToAssets(shares));
	}

	// ---- exits (the withdraw queue only) ----

	function redeemAVAX(uint256 shares) external onlyRole(WITHDRAW_QUEUE_ROLE) returns (uint256 assets) {
		assets = previewRedeem(shares);
		if (assets == 0) revert ZeroAssets();
		_pay(assets, shares, msg.sender, msg.sender);
	}

	function withdrawAVAX(uint256 assets) external onlyRole(WITHDRAW_QUEUE_ROLE) returns (uint256 shares) {
		shares = previewWithdraw(assets);
		_pay(assets, shares, msg.sender, msg.sender);
	}

	function redeem(uint256 shares, address receiver, address _owner) external onlyRole(WITHDRAW_QUEUE_ROLE) returns (uint256 assets) {
		assets = previewRedeem(shares);
		if (assets == 0) revert ZeroAssets();
		_spendAllowance(_owner, shares);
		_pay(assets, shares, receiver, _owner);
	}

	function withdraw(uint256 assets, address receiver, address _owner) external onlyRole(WITHDRAW_QUEUE_ROLE) returns (uint256 shares) {
		shares = previewWithdraw(assets);
		_spendAllowance(_owner, shares);
		_pay(assets, shares, receiver, _owner);
	}

	// ---- staking (STAKER_ROLE: the queue's depositor path) ----

	/// @notice AVAX back from staking with its reward; the fee on the reward goes to the protocol
	///         (the owner stands in for ClaimProtocolDAO).
	function depositFromStaking(uint256 baseAmt, uint256 rewardsAmt, bytes32 source) external payable onlyRole(STAKER_ROLE) {
		if (msg.value != baseAmt + rewardsAmt || baseAmt > stakingTotalAssets) revert InvalidStakingDeposit();
		uint256 fee = _fee(rewardsAmt);
		stakingTotalAssets -= baseAmt;
		asset.deposit{value: msg.value - fee}();
		if (fee > 0) {
			(bool ok, ) = owner.call{value: fee}("");
			if (!ok) revert InvalidStakingDeposit();
			emit FeeCollected(source, fee);
		}
		emit DepositedFromStaking(source, msg.sender, baseAmt, rewardsAmt - fee);
	}

	// ---- seeding ----

	function depositFor(address receiver, uint256 assets) external onlyOwnerOrNetwork whenNotPaused("TokenggAVAX") returns (uint256 shares) {
		shares = convertToShares(assets);
		if (shares == 0) revert ZeroShares();
		asset.mint(address(this), assets);
		totalReleasedAssets += assets;
		_mint(receiver, shares);
		emit Deposit(msg.sender, receiver, assets, shares);
	}

	/// @dev MinipoolManager's path. No liquidity check here, as on mainnet: launching checks
	///      amountAvailableForStaking in MinipoolManager; a cycling pool takes its AVAX back as is.
	function withdrawForStaking(uint256 assets) external onlyOwnerOrNetwork {
		stakingTotalAssets += assets;
		asset.burn(address(this), assets);
		emit WithdrawnForStaking(MINIPOOL_SOURCE, msg.sender, assets);
	}

	/// @dev The fee goes to the protocol on mainnet, so only the remainder re-enters the vault.
	function depositFromStaking(uint256 baseAmt, uint256 rewardsAmt) external onlyOwnerOrNetwork {
		if (baseAmt > stakingTotalAssets) revert InvalidStakingDeposit();
		uint256 fee = _fee(rewardsAmt);
		stakingTotalAssets -= baseAmt;
		asset.mint(address(this), baseAmt + rewardsAmt - fee);
		if (fee > 0) emit FeeCollected(MINIPOOL_SOURCE, fee);
		emit DepositedFromStaking(MINIPOOL_SOURCE, msg.sender, baseAmt, rewardsAmt - fee);
	}

	// ---- internals ----

	function _fee(uint256 amount) internal view returns (uint256) {
		return mulDivDown(amount, ProtocolDAO(_contract("ProtocolDAO")).getFeeBips(), 10000);
	}

	function _depositShares(uint256 assets) internal view returns (uint256 shares) {
		shares = previewDeposit(assets);
		if (shares == 0) revert ZeroShares();
	}

	function _afterDeposit(uint256 assets, uint256 shares, address receiver) internal {
		totalReleasedAssets += assets;
		_mint(receiver, shares);
		emit Deposit(msg.sender, receiver, assets, shares);
	}

	function _spendAllowance(address _owner, uint256 shares) internal {
		if (msg.sender == _owner) return;
		uint256 allowed = allowance[_owner][msg.sender];
		if (allowed != type(uint256).max) {
			if (allowed < shares) revert InsufficientAllowance();
			allowance[_owner][msg.sender] = allowed - shares;
		}
	}

	/// @dev Burn `shares` of `_owner` and pay `assets` to `receiver` in WAVAX (mainnet unwraps and
	///      sends AVAX for redeemAVAX/withdrawAVAX): the devnet moves no real AVAX.
	function _pay(uint256 assets, uint256 shares, address receiver, address _owner) internal {
		if (asset.balanceOf(address(this)) < assets) revert InsufficientLiquidity();
		totalReleasedAssets -= assets;
		_burn(_owner, shares);
		emit Withdraw(msg.sender, receiver, _owner, assets, shares);
		asset.transfer(receiver, assets);
	}
}
