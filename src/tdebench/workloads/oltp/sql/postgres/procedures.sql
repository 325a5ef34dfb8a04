-- TPC-C's five transactions as server-side PL/pgSQL functions, as HammerDB drives PostgreSQL:
-- one call per transaction, which runs as one statement (and so one transaction) in the
-- driver's autocommit mode. Lists of numbers arrive as comma-separated text. The 1% New-Orders
-- with an unused item raise 'tdebench-rollback', which rolls the call's transaction back.
-- Statements are separated by a line "-- next statement" (tdebench splits on it).
CREATE FUNCTION tdebench_new_order(p_w_id int, p_d_id int, p_c_id int, p_items text, p_supply text,
                                   p_quantities text) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
  items int[] := string_to_array(p_items, ',')::int[];
  supply int[] := string_to_array(p_supply, ',')::int[];
  quantities int[] := string_to_array(p_quantities, ',')::int[];
  lines int := cardinality(items);
  v_discount numeric; v_last varchar; v_credit char(2); v_w_tax numeric; v_d_tax numeric; v_o_id int;
  v_price numeric; v_name varchar; v_data varchar; v_quantity int; v_dist char(24);
  v_amount numeric; v_total numeric := 0;
BEGIN
  SELECT c_discount, c_last, c_credit INTO STRICT v_discount, v_last, v_credit FROM customer
   WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;
  SELECT w_tax INTO STRICT v_w_tax FROM warehouse WHERE w_id = p_w_id;
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id
  RETURNING d_next_o_id - 1, d_tax INTO STRICT v_o_id, v_d_tax;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
  VALUES (v_o_id, p_d_id, p_w_id, p_c_id, localtimestamp, NULL, lines,
          CASE WHEN p_w_id = ALL (supply) THEN 1 ELSE 0 END);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
  FOR n IN 1 .. lines LOOP
    SELECT i_price, i_name, i_data INTO v_price, v_name, v_data FROM item WHERE i_id = items[n];
    IF NOT FOUND THEN
      RAISE EXCEPTION 'tdebench-rollback: item % does not exist', items[n];
    END IF;
    SELECT s_quantity, CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
             WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07
             WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
      INTO STRICT v_quantity, v_dist FROM stock WHERE s_i_id = items[n] AND s_w_id = supply[n] FOR UPDATE;
    UPDATE stock SET s_quantity = CASE WHEN v_quantity >= quantities[n] + 10 THEN v_quantity - quantities[n]
                                       ELSE v_quantity - quantities[n] + 91 END,
                     s_ytd = s_ytd + quantities[n], s_order_cnt = s_order_cnt + 1,
                     s_remote_cnt = s_remote_cnt + CASE WHEN supply[n] <> p_w_id THEN 1 ELSE 0 END
     WHERE s_i_id = items[n] AND s_w_id = supply[n];
    v_amount := quantities[n] * v_price;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
                            ol_quantity, ol_amount, ol_dist_info)
    VALUES (v_o_id, p_d_id, p_w_id, n, items[n], supply[n], NULL, quantities[n], v_amount, v_dist);
    v_total := v_total + v_amount;
  END LOOP;
  RETURN v_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax);
END $$
-- next statement
CREATE FUNCTION tdebench_customer(p_w_id int, p_d_id int, p_c_id int, p_c_last varchar) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_count int;
  v_c_id int := p_c_id;
BEGIN
  IF v_c_id IS NULL THEN
    SELECT count(*) INTO v_count FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last;
    SELECT c_id INTO STRICT v_c_id FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_c_last
     ORDER BY c_first OFFSET (v_count + 1) / 2 - 1 LIMIT 1;
  END IF;
  RETURN v_c_id;
END $$
-- next statement
CREATE FUNCTION tdebench_payment(p_w_id int, p_d_id int, p_c_w_id int, p_c_d_id int, p_c_id int,
                                 p_c_last varchar, p_amount numeric) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  v_w_name varchar; v_d_name varchar; v_c_id int; v_credit char(2); v_data varchar;
BEGIN
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w_id
  RETURNING w_name INTO STRICT v_w_name;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w_id AND d_id = p_d_id
  RETURNING d_name INTO STRICT v_d_name;
  v_c_id := tdebench_customer(p_c_w_id, p_c_d_id, p_c_id, p_c_last);
  SELECT c_credit, c_data INTO STRICT v_credit, v_data FROM customer
   WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id FOR UPDATE;
  IF v_credit = 'BC' THEN
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1,
                        c_data = left(format('%s %s %s %s %s %s | %s', v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id,
                                             to_char(p_amount, 'FM999990.00'), v_data), 500)
     WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
  ELSE
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
                        c_payment_cnt = c_payment_cnt + 1
     WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, localtimestamp, p_amount, v_w_name || '    ' || v_d_name);
  RETURN v_c_id;
END $$
-- next statement
CREATE FUNCTION tdebench_order_status(p_w_id int, p_d_id int, p_c_id int, p_c_last varchar) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_c_id int; v_balance numeric; v_o_id int; v_lines int;
BEGIN
  v_c_id := tdebench_customer(p_w_id, p_d_id, p_c_id, p_c_last);
  SELECT c_balance INTO STRICT v_balance FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
  SELECT o_id INTO v_o_id FROM orders WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id
   ORDER BY o_id DESC LIMIT 1;
  SELECT count(*) INTO v_lines FROM (SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
                                       FROM order_line WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id
                                        AND ol_o_id = v_o_id) AS lines;
  RETURN v_lines;
END $$
-- next statement
CREATE FUNCTION tdebench_delivery(p_w_id int, p_carrier_id int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  v_o_id int; v_c_id int; v_delivered int := 0;
BEGIN
  FOR d IN 1 .. 10 LOOP
    SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d
     ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    CONTINUE WHEN NOT FOUND;
    DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = d AND no_o_id = v_o_id;
    CONTINUE WHEN NOT FOUND;
    UPDATE orders SET o_carrier_id = p_carrier_id WHERE o_w_id = p_w_id AND o_d_id = d AND o_id = v_o_id
    RETURNING o_c_id INTO STRICT v_c_id;
    UPDATE order_line SET ol_delivery_d = localtimestamp WHERE ol_w_id = p_w_id AND ol_d_id = d AND ol_o_id = v_o_id;
    UPDATE customer SET c_balance = c_balance + (SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = p_w_id
                                                  AND ol_d_id = d AND ol_o_id = v_o_id),
                        c_delivery_cnt = c_delivery_cnt + 1
     WHERE c_w_id = p_w_id AND c_d_id = d AND c_id = v_c_id;
    v_delivered := v_delivered + 1;
  END LOOP;
  RETURN v_delivered;
END $$
-- next statement
CREATE FUNCTION tdebench_stock_level(p_w_id int, p_d_id int, p_threshold int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  v_next_o_id int; v_low int;
BEGIN
  SELECT d_next_o_id INTO STRICT v_next_o_id FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
  SELECT count(DISTINCT s_i_id) INTO v_low FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id
   WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id < v_next_o_id AND ol_o_id >= v_next_o_id - 20
     AND s_quantity < p_threshold;
  RETURN v_low;
END $$
