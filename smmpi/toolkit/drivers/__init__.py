"""The SDK's own container drivers (ModelTrainer's ``sm_drivers`` channel), run here."""
