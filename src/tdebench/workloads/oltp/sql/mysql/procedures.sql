-- TPC-C's five transactions as MariaDB stored procedures, as HammerDB drives MariaDB/MySQL: one
-- CALL per transaction, each procedure its own transaction (START TRANSACTION … COMMIT) that
-- any error rolls back before passing the error on (a deadlock, which the driver retries, or
-- the 'tdebench-rollback' of the spec's 1% New-Orders with an unused item). Lists of numbers
-- arrive as comma-separated text. Rows to be updated are read with FOR UPDATE: a locking read
-- sees the latest committed version, which REPEATABLE READ's plain reads would not.
-- Statements are separated by a line "-- next statement" (tdebench splits on it).
CREATE FUNCTION tdebench_nth(list TEXT, n INT) RETURNS INT DETERMINISTIC
  RETURN CAST(SUBSTRING_INDEX(SUBSTRING_INDEX(list, ',', n), ',', -1) AS INTEGER)
-- next statement
CREATE PROCEDURE tdebench_new_order(IN p_w_id INT, IN p_d_id INT, IN p_c_id INT, IN p_items TEXT,
                                    IN p_supply TEXT, IN p_quantities TEXT)
BEGIN
  DECLARE v_ol_cnt INT DEFAULT 1 + LENGTH(p_items) - LENGTH(REPLACE(p_items, ',', ''));
  DECLARE n INT DEFAULT 1;
  DECLARE v_item, v_supply, v_qty, v_o_id, v_quantity, v_all_local INT;
  DECLARE v_discount, v_w_tax, v_d_tax DECIMAL(4,4);
  DECLARE v_last VARCHAR(16);
  DECLARE v_credit CHAR(2);
  DECLARE v_price DECIMAL(12,2);
  DECLARE v_name VARCHAR(24);
  DECLARE v_data VARCHAR(50);
  DECLARE v_dist CHAR(24);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET v_all_local = 1;
  WHILE n <= v_ol_cnt DO
    IF tdebench_nth(p_supply, n) <> p_w_id THEN SET v_all_local = 0; END IF;
    SET n = n + 1;
  END WHILE;
  START TRANSACTION;
  SELECT c_discount, c_last, c_credit INTO v_discount, v_last, v_credit FROM customer
   WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;
  SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w_id;
  SELECT d_next_o_id, d_tax INTO v_o_id, v_d_tax FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id FOR UPDATE;
  UPDATE district SET d_next_o_id = v_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
  VALUES (v_o_id, p_d_id, p_w_id, p_c_id, CURRENT_TIMESTAMP, NULL, v_ol_cnt, v_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
  SET n = 1;
  WHILE n <= v_ol_cnt DO
    SET v_item = tdebench_nth(p_items, n), v_supply = tdebench_nth(p_supply, n),
        v_qty = tdebench_nth(p_quantities, n), v_price = NULL;
    SELECT i_price, i_name, i_data INTO v_price, v_name, v_data FROM item WHERE i_id = v_item;
    IF v_price IS NULL THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'tdebench-rollback: an item does not exist';
    END IF;
    SELECT s_quantity, CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
             WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07
             WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
      INTO v_quantity, v_dist FROM stock WHERE s_i_id = v_item AND s_w_id = v_supply FOR UPDATE;
    UPDATE stock SET s_quantity = IF(v_quantity >= v_qty + 10, v_quantity - v_qty, v_quantity - v_qty + 91),
                     s_ytd = s_ytd + v_qty, s_order_cnt = s_order_cnt + 1,
                     s_remote_cnt = s_remote_cnt + IF(v_supply <> p_w_id, 1, 0)
     WHERE s_i_id = v_item AND s_w_id = v_supply;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                            ol_quantity, ol_amount, ol_dist_info)
    VALUES (v_o_id, p_d_id, p_w_id, n, v_item, v_supply, NULL, v_qty, v_qty * v_price, v_dist);
    SET n = n + 1;
  END WHILE;
  COMMIT;
END
-- next statement
CREATE PROCEDURE tdebench_customer(IN p_w_id INT, IN p_d_id INT, INOUT p_c_id INT, IN p_c_last VARCHAR(16))
BEGIN
  DECLARE v_count, v_skip INT;
  IF p_c_id IS NULL THEN
    SELECT COUNT(*) INTO v_count FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last;
    SET v_skip = (v_count + 1) DIV 2 - 1;
    SELECT c_id INTO p_c_id FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last
     ORDER BY c_first LIMIT v_skip, 1;
  END IF;
END
-- next statement
CREATE PROCEDURE tdebench_payment(IN p_w_id INT, IN p_d_id INT, IN p_c_w_id INT, IN p_c_d_id INT, IN p_c_id INT,
                                  IN p_c_last VARCHAR(16), IN p_amount DECIMAL(12,2))
BEGIN
  DECLARE v_c_id INT DEFAULT p_c_id;
  DECLARE v_w_name, v_d_name VARCHAR(10);
  DECLARE v_credit CHAR(2);
  DECLARE v_data VARCHAR(500);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w_id;
  SELECT w_name INTO v_w_name FROM warehouse WHERE w_id = p_w_id;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w_id AND d_id = p_d_id;
  SELECT d_name INTO v_d_name FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
  CALL tdebench_customer(p_c_w_id, p_c_d_id, v_c_id, p_c_last);
  SELECT c_credit, c_data INTO v_credit, v_data FROM customer
   WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id FOR UPDATE;
  IF v_credit = 'BC' THEN
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1,
                        c_data = LEFT(CONCAT_WS(' ', v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, p_amount, '|', v_data), 500)
     WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
  ELSE
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1
     WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, CURRENT_TIMESTAMP, p_amount, CONCAT(v_w_name, '    ', v_d_name));
  COMMIT;
END
-- next statement
CREATE PROCEDURE tdebench_order_status(IN p_w_id INT, IN p_d_id INT, IN p_c_id INT, IN p_c_last VARCHAR(16))
BEGIN
  DECLARE v_c_id INT DEFAULT p_c_id;
  DECLARE v_o_id, v_lines INT;
  DECLARE v_balance DECIMAL(12,2);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  CALL tdebench_customer(p_w_id, p_d_id, v_c_id, p_c_last);
  SELECT c_balance INTO v_balance FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
  SELECT o_id INTO v_o_id FROM orders WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id
   ORDER BY o_id DESC LIMIT 1;
  SELECT COUNT(*) INTO v_lines FROM (SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
                                       FROM order_line WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id
                                        AND ol_o_id = v_o_id) AS found_lines;
  COMMIT;
END
-- next statement
CREATE PROCEDURE tdebench_delivery(IN p_w_id INT, IN p_carrier_id INT)
BEGIN
  DECLARE d INT DEFAULT 1;
  DECLARE v_o_id, v_c_id INT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  WHILE d <= 10 DO
    SET v_o_id = NULL;
    SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d
     ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF v_o_id IS NOT NULL THEN
      DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d AND no_o_id = v_o_id;
      SELECT o_c_id INTO v_c_id FROM orders WHERE o_w_id = p_w_id AND o_d_id = d AND o_id = v_o_id;
      UPDATE orders SET o_carrier_id = p_carrier_id WHERE o_w_id = p_w_id AND o_d_id = d AND o_id = v_o_id;
      UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP
       WHERE ol_w_id = p_w_id AND ol_d_id = d AND ol_o_id = v_o_id;
      UPDATE customer SET c_balance = c_balance + (SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = p_w_id
                                                    AND ol_d_id = d AND ol_o_id = v_o_id),
                          c_delivery_cnt = c_delivery_cnt + 1
       WHERE c_w_id = p_w_id AND c_d_id = d AND c_id = v_c_id;
    END IF;
    SET d = d + 1;
  END WHILE;
  COMMIT;
END
-- next statement
CREATE PROCEDURE tdebench_stock_level(IN p_w_id INT, IN p_d_id INT, IN p_threshold INT)
BEGIN
  DECLARE v_next_o_id, v_low INT;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  SELECT d_next_o_id INTO v_next_o_id FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
  SELECT COUNT(DISTINCT s_i_id) INTO v_low FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id
   WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id < v_next_o_id AND ol_o_id >= v_next_o_id - 20
     AND s_quantity < p_threshold;
  COMMIT;
END
